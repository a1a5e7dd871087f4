// Reads tokenizer.json with simdjson's DOM directly (io/json.h's owning DOM is too slow for an
// 11 MB file with 300k strings; this file and io/json.cpp are the includers of simdjson).
#include "text/tokenizer_json.h"

#include <simdjson.h>

#include <algorithm>
#include <optional>

namespace qvl::text::detail {

using base::ErrorCode;

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

base::Status load_vocab(const Ctx& ctx, dom::object model, TokenizerTables& t) {
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
// One merge rule while the merges load: its two sides' bytes (in MergeTexts::parts) and ids.
struct PendingMerge {
    std::uint32_t offset;  // into `parts`: left bytes then right bytes
    std::uint32_t left_len, right_len;
    std::uint64_t left_hash, right_hash;
    std::int32_t left_id, right_id, merged_id;
};

struct MergeTexts {
    std::vector<PendingMerge> pending;  // in rank order
    std::string parts;
};

// Reads every merge ("a b" or ["a", "b"]) as the bytes of its two sides.
base::Status read_merge_texts(const Ctx& ctx, dom::array merges, MergeTexts* out) {
    std::vector<PendingMerge>& pending = out->pending;
    std::string& parts = out->parts;
    pending.reserve(merges.size());
    std::string bytes;
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
        PendingMerge p{};
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
    return base::Status();
}

// Rows looked up this far ahead of the one resolved are prefetched.
constexpr std::size_t kMergesAhead = 16;

// Finds the vocab ids of each merge's sides and result; a side missing from the vocab is an
// error naming the merge.
base::Status resolve_merge_ids(const Ctx& ctx, dom::array merges, const TokenizerTables& t,
                               MergeTexts* m) {
    constexpr std::size_t kAhead = kMergesAhead;
    std::vector<PendingMerge>& pending = m->pending;
    const std::size_t n = pending.size();
    std::int32_t guess = 0;
    for (std::size_t i = 0; i < n + kAhead; ++i) {
        if (i < n) {
            t.tokens.prefetch(pending[i].left_hash);
            t.tokens.prefetch(pending[i].right_hash);
        }
        if (i < kAhead) continue;
        PendingMerge& p = pending[i - kAhead];
        const std::string_view both(m->parts.data() + p.offset, p.left_len + p.right_len);
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
    return base::Status();
}

base::Status load_merges(const Ctx& ctx, dom::object model, TokenizerTables& t) {
    dom::array merges;
    const auto m = member(model, "merges");
    if (!m || m->get_array().get(merges) != simdjson::SUCCESS) {
        return ctx.corrupt("model.merges: missing or not an array");
    }
    MergeTexts texts;
    QVL_TRY(read_merge_texts(ctx, merges, &texts));
    QVL_TRY(resolve_merge_ids(ctx, merges, t, &texts));
    const std::vector<PendingMerge>& pending = texts.pending;
    const std::size_t n = pending.size();
    t.merges.reserve(n);
    for (std::size_t i = 0; i < n + kMergesAhead; ++i) {
        if (i < n) t.merges.prefetch(pending[i].left_id, pending[i].right_id);
        if (i < kMergesAhead) continue;
        const PendingMerge& p = pending[i - kMergesAhead];
        t.merges.insert(p.left_id, p.right_id, std::int32_t(i - kMergesAhead), p.merged_id);
    }
    return base::Status();
}

base::Status load_added_tokens(const Ctx& ctx, dom::object root, TokenizerTables& t) {
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

base::Status load_normalizer(const Ctx& ctx, dom::object root, TokenizerTables& t) {
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

base::Status load_pre_tokenizer(const Ctx& ctx, dom::object root, TokenizerTables& t) {
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
            t.split_pattern = std::string(pattern);
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

}  // namespace

base::Status read_tokenizer_json(const std::filesystem::path& path, TokenizerTables& t) {
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

}  // namespace qvl::text::detail
