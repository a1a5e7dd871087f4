// The one includer of pcre2.h and utf8proc.h (and, for load speed, of simdjson for the 11 MB
// tokenizer.json; io/json.h serves the small tokenizer_config.json).
#include "model/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <simdjson.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>

#include "io/json.h"
#include "model/bpe.h"
#include "model/utf8.h"

namespace qvl::model {
namespace detail {

struct AddedToken {
    std::string content;
    std::int32_t id;
};

struct PcreCodeDeleter {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};

struct TokenizerImpl {
    TokenTable tokens;  // every id; the BPE vocab is the indexed part
    MergeTable merges;
    std::array<std::int32_t, 256> byte_ids{};
    std::vector<AddedToken> added;  // longest first, so the first hit at a position wins
    std::array<bool, 256> added_first_byte{};
    std::vector<std::uint8_t> special;  // per id
    bool nfc = false;
    bool ignore_merges = false;
    std::unique_ptr<pcre2_code, PcreCodeDeleter> split_re;
    bool jit = false;
};

}  // namespace detail

using base::ErrorCode;
using detail::TokenizerImpl;

namespace {

namespace dom = simdjson::dom;

// Error helpers: every message starts with the file name, then the JSON path.
class Ctx {
  public:
    explicit Ctx(std::string file) : file_(std::move(file)) {}
    template <class... Args>
    base::Status corrupt(fmt::format_string<Args...> f, Args&&... args) const {
        return base::Status(ErrorCode::kCorruptFile,
                            file_ + ": " + fmt::format(f, std::forward<Args>(args)...));
    }
    template <class... Args>
    base::Status unsupported(fmt::format_string<Args...> f, Args&&... args) const {
        return base::Status(ErrorCode::kUnsupported,
                            file_ + ": " + fmt::format(f, std::forward<Args>(args)...));
    }

  private:
    std::string file_;
};

std::optional<dom::element> member(dom::object obj, std::string_view key) {
    dom::element e;
    if (obj.at_key(key).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
    return e;
}

std::string_view type_of(dom::element e) {
    dom::object o;
    std::string_view t;
    if (e.get_object().get(o) != simdjson::SUCCESS) return {};
    if (o.at_key("type").get_string().get(t) != simdjson::SUCCESS) return {};
    return t;
}

bool string_is_empty_or_null(dom::object obj, std::string_view key) {
    const auto e = member(obj, key);
    std::string_view s;
    return !e || (e->get_string().get(s) == simdjson::SUCCESS && s.empty());
}

bool bool_member(dom::object obj, std::string_view key) {
    const auto e = member(obj, key);
    bool b = false;
    return e && e->get_bool().get(b) == simdjson::SUCCESS && b;
}

constexpr std::int64_t kMaxTokenId = 1 << 24;

base::Status load_vocab(const Ctx& ctx, dom::object model, TokenizerImpl& t) {
    dom::object vocab;
    const auto v = member(model, "vocab");
    if (!v || v->get_object().get(vocab) != simdjson::SUCCESS) {
        return ctx.corrupt("model.vocab: missing or not an object");
    }
    t.tokens.reserve(vocab.size() + 64, 8 * vocab.size());
    std::string bytes;
    for (dom::key_value_pair kv : vocab) {
        std::int64_t id = -1;
        if (kv.value.get_int64().get(id) != simdjson::SUCCESS || id < 0 || id >= kMaxTokenId) {
            return ctx.corrupt("model.vocab['{}']: id is not an integer in [0, {})", kv.key,
                               kMaxTokenId);
        }
        if (!detail::byte_level_decode(kv.key, bytes)) {
            return ctx.corrupt("model.vocab['{}']: not in the byte-level alphabet", kv.key);
        }
        if (!t.tokens.add(std::int32_t(id), bytes, /*indexed=*/true)) {
            return ctx.corrupt("model.vocab['{}']: id {} is used twice", kv.key, id);
        }
    }
    t.tokens.build_index();
    for (int b = 0; b < 256; ++b) {
        const char c = char(b);
        t.byte_ids[std::size_t(b)] = t.tokens.find(std::string_view(&c, 1));
        if (t.byte_ids[std::size_t(b)] < 0) {
            return ctx.corrupt("model.vocab: no token for byte 0x{:02x}", b);
        }
    }
    return base::Status();
}

// Three passes so that the random lookups of each pass can be prefetched ahead: decode every
// merge to bytes, resolve the ids, fill the merge table.
base::Status load_merges(const Ctx& ctx, dom::object model, TokenizerImpl& t) {
    dom::array merges;
    const auto m = member(model, "merges");
    if (!m || m->get_array().get(merges) != simdjson::SUCCESS) {
        return ctx.corrupt("model.merges: missing or not an array");
    }
    struct Pending {
        std::uint32_t offset;  // into `parts`: left bytes then right bytes
        std::uint32_t left_len, right_len;
        std::uint64_t left_hash, right_hash;
        std::int32_t left_id, right_id, merged_id;
    };
    std::vector<Pending> pending;
    pending.reserve(merges.size());
    std::string parts, bytes;
    parts.reserve(16 * merges.size());
    for (dom::element e : merges) {
        const std::size_t rank = pending.size();
        std::string_view a, b, s;
        dom::array pair;
        if (e.get_string().get(s) == simdjson::SUCCESS) {
            const std::size_t sp = s.find(' ');
            if (sp == std::string_view::npos || s.find(' ', sp + 1) != std::string_view::npos) {
                return ctx.corrupt("model.merges[{}]: '{}' is not two tokens", rank, s);
            }
            a = s.substr(0, sp);
            b = s.substr(sp + 1);
        } else if (e.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
                   pair.at(0).get_string().get(a) != simdjson::SUCCESS ||
                   pair.at(1).get_string().get(b) != simdjson::SUCCESS) {
            return ctx.corrupt("model.merges[{}]: not a string or a pair of strings", rank);
        }
        Pending p{};
        p.offset = std::uint32_t(parts.size());
        if (!detail::byte_level_decode(a, bytes)) {
            return ctx.corrupt("model.merges[{}]: '{}' is not in the byte-level alphabet", rank, a);
        }
        p.left_len = std::uint32_t(bytes.size());
        p.left_hash = detail::hash_bytes(bytes);
        parts += bytes;
        if (!detail::byte_level_decode(b, bytes)) {
            return ctx.corrupt("model.merges[{}]: '{}' is not in the byte-level alphabet", rank, b);
        }
        p.right_len = std::uint32_t(bytes.size());
        p.right_hash = detail::hash_bytes(bytes);
        parts += bytes;
        pending.push_back(p);
    }
    constexpr std::size_t kAhead = 16;
    const std::size_t n = pending.size();
    std::int32_t guess = 0;
    for (std::size_t i = 0; i < n + kAhead; ++i) {
        if (i < n) {
            t.tokens.prefetch(pending[i].left_hash);
            t.tokens.prefetch(pending[i].right_hash);
        }
        if (i < kAhead) continue;
        Pending& p = pending[i - kAhead];
        const std::string_view both(parts.data() + p.offset, p.left_len + p.right_len);
        const std::string_view left = both.substr(0, p.left_len);
        const std::string_view right = both.substr(p.left_len);
        p.left_id = t.tokens.find(left, p.left_hash);
        p.right_id = t.tokens.find(right, p.right_hash);
        // Vocabularies usually number merged tokens in merge order: check that guess first.
        p.merged_id = guess;
        if (!t.tokens.defined(guess) || t.tokens.bytes(guess) != both) {
            p.merged_id = t.tokens.find(both);
        }
        guess = p.merged_id + 1;
        if (p.left_id < 0 || p.right_id < 0 || p.merged_id < 0) {
            dom::element e = merges.at(i - kAhead).value_unsafe();
            std::string_view text;
            if (e.get_string().get(text) != simdjson::SUCCESS) text = "(pair)";
            std::string missing;
            detail::byte_level_encode(p.left_id < 0    ? left
                                      : p.right_id < 0 ? right
                                                       : both,
                                      missing);
            return ctx.corrupt("model.merges[{}]: '{}': '{}' is not in the vocab", i - kAhead, text,
                               missing);
        }
    }
    t.merges.reserve(n);
    for (std::size_t i = 0; i < n + kAhead; ++i) {
        if (i < n) t.merges.prefetch(pending[i].left_id, pending[i].right_id);
        if (i < kAhead) continue;
        const Pending& p = pending[i - kAhead];
        t.merges.insert(p.left_id, p.right_id, std::int32_t(i - kAhead), p.merged_id);
    }
    return base::Status();
}

base::Status load_added_tokens(const Ctx& ctx, dom::object root, TokenizerImpl& t) {
    dom::array arr;
    const auto a = member(root, "added_tokens");
    if (!a) return base::Status();
    if (a->get_array().get(arr) != simdjson::SUCCESS) {
        return ctx.corrupt("added_tokens: not an array");
    }
    std::size_t i = 0;
    for (dom::element e : arr) {
        dom::object o;
        std::int64_t id = -1;
        std::string_view content;
        if (e.get_object().get(o) != simdjson::SUCCESS ||
            o.at_key("id").get_int64().get(id) != simdjson::SUCCESS || id < 0 ||
            id >= kMaxTokenId ||
            o.at_key("content").get_string().get(content) != simdjson::SUCCESS || content.empty()) {
            return ctx.corrupt("added_tokens[{}]: needs an integer id and a non-empty content", i);
        }
        for (const char* flag : {"single_word", "lstrip", "rstrip"}) {
            if (bool_member(o, flag)) {
                return ctx.unsupported("added_tokens[{}] '{}': {}=true is not implemented", i,
                                       content, flag);
            }
        }
        if (t.tokens.defined(std::int32_t(id))) {
            // HF keeps a vocab id for an added token with the same text.
            std::string bytes;
            if (!detail::byte_level_decode(content, bytes) ||
                t.tokens.bytes(std::int32_t(id)) != bytes) {
                return ctx.corrupt("added_tokens[{}] '{}': id {} is already a different token", i,
                                   content, id);
            }
        } else {
            t.tokens.add(std::int32_t(id), content, /*indexed=*/false);
        }
        t.added.push_back({std::string(content), std::int32_t(id)});
        if (t.special.size() <= std::size_t(id)) t.special.resize(std::size_t(id) + 1, 0);
        t.special[std::size_t(id)] = bool_member(o, "special") ? 1 : 0;
        t.added_first_byte[std::uint8_t(content[0])] = true;
        ++i;
    }
    std::stable_sort(t.added.begin(), t.added.end(), [](const auto& x, const auto& y) {
        return x.content.size() > y.content.size();
    });
    return base::Status();
}

base::Status load_normalizer(const Ctx& ctx, dom::object root, TokenizerImpl& t) {
    const auto n = member(root, "normalizer");
    if (!n) return base::Status();
    std::vector<dom::element> parts{*n};
    dom::array seq;
    if (type_of(*n) == "Sequence") {
        if (n->at_key("normalizers").get_array().get(seq) != simdjson::SUCCESS) {
            return ctx.corrupt("normalizer.normalizers: not an array");
        }
        parts.clear();
        for (dom::element e : seq) parts.push_back(e);
    }
    for (dom::element p : parts) {
        if (type_of(p) != "NFC") {
            return ctx.unsupported("normalizer: type '{}' is not implemented (only NFC)",
                                   type_of(p));
        }
        t.nfc = true;
    }
    return base::Status();
}

base::Status compile_split_regex(const Ctx& ctx, std::string_view pattern, TokenizerImpl& t) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_offset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof(msg));
        return ctx.unsupported("pre_tokenizer: regex does not compile at offset {}: {}", err_offset,
                               reinterpret_cast<const char*>(msg));
    }
    t.split_re.reset(code);
    t.jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return base::Status();
}

base::Status load_pre_tokenizer(const Ctx& ctx, dom::object root, TokenizerImpl& t) {
    const auto p = member(root, "pre_tokenizer");
    if (!p)
        return ctx.unsupported("pre_tokenizer: missing (only Split + ByteLevel is implemented)");
    std::vector<dom::element> parts{*p};
    dom::array seq;
    if (type_of(*p) == "Sequence") {
        if (p->at_key("pretokenizers").get_array().get(seq) != simdjson::SUCCESS) {
            return ctx.corrupt("pre_tokenizer.pretokenizers: not an array");
        }
        parts.clear();
        for (dom::element e : seq) parts.push_back(e);
    }
    bool have_split = false, have_byte_level = false;
    for (dom::element e : parts) {
        const std::string_view type = type_of(e);
        dom::object o;
        if (type.empty() || e.get_object().get(o) != simdjson::SUCCESS) {
            return ctx.unsupported("pre_tokenizer: an entry without a type");
        }
        if (type == "Split" && !have_split) {
            std::string_view pattern, behavior;
            if (o.at_key("pattern").at_key("Regex").get_string().get(pattern) !=
                simdjson::SUCCESS) {
                return ctx.unsupported("pre_tokenizer: Split without a Regex pattern");
            }
            if (o.at_key("behavior").get_string().get(behavior) != simdjson::SUCCESS ||
                behavior != "Isolated" || bool_member(o, "invert")) {
                return ctx.unsupported("pre_tokenizer: Split behavior '{}' is not implemented",
                                       behavior);
            }
            QVL_TRY(compile_split_regex(ctx, pattern, t));
            have_split = true;
        } else if (type == "ByteLevel" && !have_byte_level) {
            if (bool_member(o, "add_prefix_space") || bool_member(o, "use_regex")) {
                return ctx.unsupported(
                    "pre_tokenizer: ByteLevel with add_prefix_space or use_regex");
            }
            have_byte_level = true;
        } else {
            return ctx.unsupported("pre_tokenizer: '{}' is not implemented", type);
        }
    }
    if (!have_split || !have_byte_level) {
        return ctx.unsupported("pre_tokenizer: expected a Split regex and ByteLevel");
    }
    return base::Status();
}

base::Status load_tokenizer_json(const std::filesystem::path& path, TokenizerImpl& t) {
    const Ctx ctx(path.string());
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        return base::error(ErrorCode::kNotFound, "{}: no such file", path.string());
    }
    simdjson::padded_string text;
    if (simdjson::padded_string::load(path.string()).get(text) != simdjson::SUCCESS) {
        return base::error(ErrorCode::kIo, "{}: cannot read", path.string());
    }
    dom::parser parser;
    dom::element root_el;
    dom::object root;
    if (const auto err = parser.parse(text).get(root_el); err != simdjson::SUCCESS) {
        return ctx.corrupt("invalid JSON: {}", simdjson::error_message(err));
    }
    if (root_el.get_object().get(root) != simdjson::SUCCESS) {
        return ctx.corrupt("top level is not an object");
    }
    dom::object model;
    const auto m = member(root, "model");
    if (!m || m->get_object().get(model) != simdjson::SUCCESS) {
        return ctx.corrupt("model: missing or not an object");
    }
    if (const std::string_view type = type_of(*m); !type.empty() && type != "BPE") {
        return ctx.unsupported("model.type '{}' is not implemented (only BPE)", type);
    }
    if (member(model, "dropout") || bool_member(model, "byte_fallback") ||
        !string_is_empty_or_null(model, "continuing_subword_prefix") ||
        !string_is_empty_or_null(model, "end_of_word_suffix")) {
        return ctx.unsupported(
            "model: dropout, byte_fallback or subword prefixes/suffixes are not implemented");
    }
    t.ignore_merges = bool_member(model, "ignore_merges");
    QVL_TRY(load_vocab(ctx, model, t));
    QVL_TRY(load_merges(ctx, model, t));
    QVL_TRY(load_added_tokens(ctx, root, t));
    QVL_TRY(load_normalizer(ctx, root, t));
    QVL_TRY(load_pre_tokenizer(ctx, root, t));
    if (const auto d = member(root, "decoder"); d && type_of(*d) != "ByteLevel") {
        return ctx.unsupported("decoder: type '{}' is not implemented (only ByteLevel)",
                               type_of(*d));
    }
    t.special.resize(std::size_t(t.tokens.size()), 0);
    return base::Status();
}

// tokenizer_config.json only names special tokens; check that they exist so a mismatched
// pair of files is caught at load.
base::Status check_tokenizer_config(const std::filesystem::path& path, const Tokenizer& tok) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return base::Status();
    QVL_ASSIGN_OR_RETURN(const io::JsonValue cfg, io::read_json_file(path));
    if (!cfg.is_object()) {
        return base::error(ErrorCode::kCorruptFile, "{}: top level is not an object",
                           path.string());
    }
    if (const io::JsonValue* s = cfg.find("split_special_tokens");
        s && s->is_bool() && s->as_bool()) {
        return base::error(ErrorCode::kUnsupported,
                           "{}: split_special_tokens=true is not implemented", path.string());
    }
    for (const char* key : {"bos_token", "eos_token", "pad_token", "unk_token"}) {
        const io::JsonValue* v = cfg.find(key);
        if (v != nullptr && v->is_object()) v = v->find("content");
        if (v == nullptr || !v->is_string()) continue;
        if (tok.token_id(v->as_string()) < 0) {
            return base::error(ErrorCode::kCorruptFile,
                               "{}: {} '{}' is not a token of tokenizer.json", path.string(), key,
                               v->as_string());
        }
    }
    return base::Status();
}

// Every code point below U+0300 is NFC-stable and never composes with a neighbour; in UTF-8
// those are exactly the sequences whose bytes are all < 0xCC.
bool may_need_nfc(std::string_view s) {
    for (const char c : s) {
        if (std::uint8_t(c) >= 0xCC) return true;
    }
    return false;
}

// A per-call cache pre-token -> ids. Keys point into the text (or a normalised copy that lives
// as long as the call), so nothing is copied.
class PieceCache {
  public:
    static constexpr std::size_t kMaxKey = 64;
    struct Slot {
        const char* data = nullptr;
        std::uint32_t length = 0;
        std::uint32_t tag = 0;
        std::uint32_t begin = 0;
        std::uint32_t count = 0;
    };
    PieceCache() : slots_(256), mask_(255) {}

    // The slot of `piece`: found (data != nullptr) or the empty slot to fill.
    Slot& lookup(std::string_view piece, std::uint64_t h) {
        const auto tag = std::uint32_t(h >> 32);
        for (std::uint64_t i = h & mask_;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.data == nullptr) return s;
            if (s.tag == tag && s.length == piece.size() &&
                std::memcmp(s.data, piece.data(), piece.size()) == 0) {
                return s;
            }
        }
    }
    void fill(Slot& s, std::string_view piece, std::uint64_t h, std::span<const std::int32_t> ids) {
        s = Slot{piece.data(), std::uint32_t(piece.size()), std::uint32_t(h >> 32),
                 std::uint32_t(ids_.size()), std::uint32_t(ids.size())};
        ids_.insert(ids_.end(), ids.begin(), ids.end());
        if (2 * ++used_ > slots_.size()) grow();
    }
    std::span<const std::int32_t> ids(const Slot& s) const {
        return {ids_.data() + s.begin, s.count};
    }

  private:
    void grow() {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        mask_ = slots_.size() - 1;
        for (const Slot& s : old) {
            if (s.data == nullptr) continue;
            const std::uint64_t h = detail::hash_bytes({s.data, s.length});
            std::uint64_t i = h & mask_;
            while (slots_[i].data != nullptr) i = (i + 1) & mask_;
            slots_[i] = s;
        }
    }
    std::vector<Slot> slots_;
    std::uint64_t mask_;
    std::size_t used_ = 0;
    std::vector<std::int32_t> ids_;
};

struct MatchDataDeleter {
    void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
struct MatchContextDeleter {
    void operator()(pcre2_match_context* m) const { pcre2_match_context_free(m); }
};
struct JitStackDeleter {
    void operator()(pcre2_jit_stack* s) const { pcre2_jit_stack_free(s); }
};

// The state of one encode() call.
class Encoder {
  public:
    Encoder(const TokenizerImpl& t, std::vector<std::int32_t>& out)
        : t_(t),
          out_(out),
          match_(pcre2_match_data_create_from_pattern(t.split_re.get(), nullptr)) {}

    base::Status segment(std::string_view seg) {
        if (seg.empty()) return base::Status();
        if (t_.nfc && may_need_nfc(seg)) {
            utf8proc_uint8_t* dst = nullptr;
            const utf8proc_ssize_t n = utf8proc_map(
                reinterpret_cast<const utf8proc_uint8_t*>(seg.data()), utf8proc_ssize_t(seg.size()),
                &dst, utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
            if (n < 0) {
                return base::error(ErrorCode::kInternal, "NFC normalisation failed: {}",
                                   utf8proc_errmsg(n));
            }
            normalized_.emplace_back(reinterpret_cast<const char*>(dst), std::size_t(n));
            std::free(dst);
            seg = normalized_.back();
        }
        return split(seg);
    }

  private:
    base::Status split(std::string_view seg) {
        const auto* subject = reinterpret_cast<PCRE2_SPTR>(seg.data());
        const std::size_t n = seg.size();
        std::size_t gap = 0, off = 0;
        while (off < n) {
            int rc = t_.jit ? pcre2_jit_match(t_.split_re.get(), subject, n, off, 0, match_.get(),
                                              context_.get())
                            : pcre2_match(t_.split_re.get(), subject, n, off, PCRE2_NO_UTF_CHECK,
                                          match_.get(), context_.get());
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !context_) {
                // Long runs can outgrow the default 32 KiB JIT stack; retry with a big one.
                context_.reset(pcre2_match_context_create(nullptr));
                stack_.reset(pcre2_jit_stack_create(64 << 10, 64 << 20, nullptr));
                pcre2_jit_stack_assign(context_.get(), nullptr, stack_.get());
                continue;
            }
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) {
                PCRE2_UCHAR msg[256];
                pcre2_get_error_message(rc, msg, sizeof(msg));
                return base::error(ErrorCode::kInternal, "pre-tokenizer regex failed: {}",
                                   reinterpret_cast<const char*>(msg));
            }
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match_.get());
            const std::size_t s = ov[0], e = ov[1];
            if (e == s) {  // an empty match splits nothing; step over one character
                off = s + 1;
                while (off < n && (std::uint8_t(seg[off]) & 0xC0) == 0x80) ++off;
                continue;
            }
            if (s > gap) piece(seg.substr(gap, s - gap));
            piece(seg.substr(s, e - s));
            gap = off = e;
        }
        if (gap < n) piece(seg.substr(gap));
        return base::Status();
    }

    void piece(std::string_view p) {
        if (t_.ignore_merges) {
            if (const std::int32_t id = t_.tokens.find(p); id >= 0) {
                out_.push_back(id);
                return;
            }
        }
        if (p.size() > PieceCache::kMaxKey) {
            detail::bpe_merge(t_.merges, t_.byte_ids, p, scratch_, out_);
            return;
        }
        const std::uint64_t h = detail::hash_bytes(p);
        PieceCache::Slot& slot = cache_.lookup(p, h);
        if (slot.data != nullptr) {
            const auto ids = cache_.ids(slot);
            out_.insert(out_.end(), ids.begin(), ids.end());
            return;
        }
        const std::size_t before = out_.size();
        detail::bpe_merge(t_.merges, t_.byte_ids, p, scratch_, out_);
        cache_.fill(slot, p, h, std::span<const std::int32_t>(out_).subspan(before));
    }

    const TokenizerImpl& t_;
    std::vector<std::int32_t>& out_;
    std::unique_ptr<pcre2_match_data, MatchDataDeleter> match_;
    std::unique_ptr<pcre2_match_context, MatchContextDeleter> context_;
    std::unique_ptr<pcre2_jit_stack, JitStackDeleter> stack_;
    std::deque<std::string> normalized_;  // stable addresses for cache keys
    detail::BpeScratch scratch_;
    PieceCache cache_;
};

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}

base::Result<Tokenizer> Tokenizer::load(const std::filesystem::path& model_dir) {
    auto impl = std::make_shared<TokenizerImpl>();
    QVL_TRY(load_tokenizer_json(model_dir / "tokenizer.json", *impl));
    Tokenizer tok(std::move(impl));
    QVL_TRY(check_tokenizer_config(model_dir / "tokenizer_config.json", tok));
    return tok;
}

base::Result<std::vector<std::int32_t>> Tokenizer::encode(std::string_view text) const {
    if (const std::size_t bad = detail::find_invalid_utf8(text); bad != std::string_view::npos) {
        return base::error(ErrorCode::kInvalidArgument,
                           "text is not valid UTF-8: bad byte 0x{:02x} at byte offset {}",
                           std::uint8_t(text[bad]), bad);
    }
    const TokenizerImpl& t = *impl_;
    std::vector<std::int32_t> ids;
    ids.reserve(text.size() / 4 + 16);
    Encoder enc(t, ids);
    std::size_t seg_start = 0;
    for (std::size_t i = 0; i < text.size();) {
        if (!t.added_first_byte[std::uint8_t(text[i])]) {
            ++i;
            continue;
        }
        const detail::AddedToken* hit = nullptr;
        for (const detail::AddedToken& a : t.added) {
            if (text.compare(i, a.content.size(), a.content) == 0) {
                hit = &a;
                break;
            }
        }
        if (hit == nullptr) {
            ++i;
            continue;
        }
        QVL_TRY(enc.segment(text.substr(seg_start, i - seg_start)));
        ids.push_back(hit->id);
        i += hit->content.size();
        seg_start = i;
    }
    QVL_TRY(enc.segment(text.substr(seg_start)));
    return ids;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skip_special) const {
    std::string bytes;
    for (const std::int32_t id : ids) {
        if (!impl_->tokens.defined(id) || (skip_special && is_special(id))) continue;
        bytes.append(impl_->tokens.bytes(id));
    }
    if (detail::find_invalid_utf8(bytes) == std::string_view::npos) return bytes;
    std::string out;
    out.reserve(bytes.size() + 8);
    detail::append_utf8_lossy(out, bytes, /*final=*/true);
    return out;
}

std::int32_t Tokenizer::token_id(std::string_view token_text) const {
    for (const detail::AddedToken& a : impl_->added) {
        if (a.content == token_text) return a.id;
    }
    std::string bytes;
    if (!detail::byte_level_decode(token_text, bytes)) return -1;
    return impl_->tokens.find(bytes);
}

bool Tokenizer::is_special(std::int32_t id) const {
    return id >= 0 && std::size_t(id) < impl_->special.size() && impl_->special[std::size_t(id)];
}

int Tokenizer::vocab_size() const { return impl_->tokens.size(); }

std::string_view Tokenizer::token_bytes(std::int32_t id) const {
    return impl_->tokens.defined(id) ? impl_->tokens.bytes(id) : std::string_view();
}

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special)
    : tok_(&tok), skip_special_(skip_special) {}

std::string_view StreamDecoder::push(std::int32_t id) {
    out_.clear();
    if (skip_special_ && tok_->is_special(id)) return {};
    const std::string_view bytes = tok_->token_bytes(id);
    if (bytes.empty()) return {};
    std::string_view input = bytes;
    if (n_pending_ > 0) {
        joined_.assign(reinterpret_cast<const char*>(pending_), std::size_t(n_pending_));
        joined_.append(bytes);
        input = joined_;
    }
    const std::size_t used = detail::append_utf8_lossy(out_, input, /*final=*/false);
    n_pending_ = int(input.size() - used);  // an incomplete sequence: at most 3 bytes
    std::memcpy(pending_, input.data() + used, std::size_t(n_pending_));
    return out_;
}

std::string_view StreamDecoder::finish() {
    out_.clear();
    detail::append_utf8_lossy(
        out_, std::string_view(reinterpret_cast<const char*>(pending_), std::size_t(n_pending_)),
        /*final=*/true);
    n_pending_ = 0;
    return out_;
}

}  // namespace qvl::model
