// The one includer of pcre2.h and utf8proc.h: pre-tokenizer regex, NFC, encode, decode.
#include "text/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "io/json.h"
#include "text/bpe.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

namespace qvl::text {
namespace detail {

struct PcreCodeDeleter {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};

struct TokenizerImpl : TokenizerTables {
    std::unique_ptr<pcre2_code, PcreCodeDeleter> split_re;
    bool jit = false;
};

}  // namespace detail

using base::ErrorCode;
using detail::TokenizerImpl;

namespace {

base::Status compile_split_regex(const std::filesystem::path& file, TokenizerImpl& t) {
    const std::string& pattern = t.split_pattern;
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_offset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof(msg));
        return base::error(ErrorCode::kUnsupported,
                           "{}: pre_tokenizer: regex does not compile at offset {}: {}",
                           file.string(), err_offset, reinterpret_cast<const char*>(msg));
    }
    t.split_re.reset(code);
    t.jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
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
    const std::filesystem::path file = model_dir / "tokenizer.json";
    QVL_TRY(detail::read_tokenizer_json(file, *impl));
    QVL_TRY(compile_split_regex(file, *impl));
    Tokenizer tok(std::move(impl));
    QVL_TRY(check_tokenizer_config(model_dir / "tokenizer_config.json", tok));
    return tok;
}

base::Status Tokenizer::check_utf8(std::string_view text) {
    if (const std::size_t bad = detail::find_invalid_utf8(text); bad != std::string_view::npos) {
        return base::error(ErrorCode::kInvalidArgument,
                           "text is not valid UTF-8: bad byte 0x{:02x} at byte offset {}",
                           std::uint8_t(text[bad]), bad);
    }
    return base::Status();
}

base::Result<std::vector<std::int32_t>> Tokenizer::encode(std::string_view text) const {
    QVL_TRY(check_utf8(text));
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

}  // namespace qvl::text
