// The Qwen2/Qwen3 byte-level BPE tokenizer, loaded from a Hugging Face tokenizer.json (mirrors
// tokenizers' AddedVocabulary + NFC normalizer + Split/ByteLevel pre-tokenizer + BPE model +
// ByteLevel decoder). Nothing about Qwen is hard-coded except the algorithm: vocab, merges,
// added tokens and the pre-tokenizer regex all come from the file.
//
// Encode pipeline (HF semantics): added tokens written in the text are matched as whole strings
// first (leftmost, longest); each remaining segment is NFC-normalised, split by the
// pre-tokenizer regex, mapped to bytes and merged by BPE rank (lowest rank first, leftmost on
// ties). No BOS/EOS is added.
//
// A Tokenizer is immutable after load; encode/decode may run concurrently from several threads.
// Copies are cheap (they share the tables).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace qvl::text {

namespace detail {
struct TokenizerImpl;
}

class Tokenizer {
  public:
    // Loads <model_dir>/tokenizer.json (+ tokenizer_config.json if present). Missing file:
    // kNotFound; malformed JSON or tables (unknown merge parts, duplicate ids): kCorruptFile;
    // features qvl does not implement (another model type, normalizer or pre-tokenizer):
    // kUnsupported. Errors name the file and the key.
    static base::Result<Tokenizer> load(const std::filesystem::path& model_dir);

    // Encodes UTF-8 text. Added/special tokens written in the text (e.g. "<|im_start|>") are
    // matched as whole strings first. Invalid UTF-8 -> kInvalidArgument naming the byte offset.
    // Linear-ish in the text length (no quadratic BPE on long runs).
    base::Result<std::vector<std::int32_t>> encode(std::string_view text) const;

    // The check encode() makes, for callers that want to report invalid UTF-8 against their own
    // input (a prompt file) before it is embedded in a larger text: kInvalidArgument naming the
    // first bad byte and its offset in `text`.
    static base::Status check_utf8(std::string_view text);

    // Decodes ids to UTF-8; special (added, special=true) tokens are skipped when skip_special.
    // Ids the tokenizer does not define (e.g. the padded logits range 151669..151935) decode to
    // nothing, as in HF. Byte sequences that are not valid UTF-8 become U+FFFD (one per maximal
    // invalid subpart, like Python's errors="replace").
    std::string decode(std::span<const std::int32_t> ids, bool skip_special = true) const;

    // Exact lookup of a token as written in tokenizer.json: an added token's content
    // ("<|im_end|>") or a vocab entry in its byte-level form ("Ġthe" for " the"). -1 if absent.
    std::int32_t token_id(std::string_view token_text) const;

    // True for added tokens marked special=true in tokenizer.json; false for others and for
    // out-of-range ids.
    bool is_special(std::int32_t id) const;

    // Number of ids the tokenizer defines: 1 + the largest vocab or added-token id.
    int vocab_size() const;

    // The raw bytes of one token (vocab tokens byte-decoded, added tokens verbatim); empty for
    // undefined ids. The view stays valid as long as any copy of this Tokenizer lives.
    std::string_view token_bytes(std::int32_t id) const;

  private:
    explicit Tokenizer(std::shared_ptr<const detail::TokenizerImpl> impl);
    std::shared_ptr<const detail::TokenizerImpl> impl_;
};

// Streaming decoder: feed ids one by one, get the UTF-8 text that is complete so far (a partial
// multibyte sequence is held back until complete). The concatenation of every push() result and
// finish() equals tok.decode(all ids, skip_special). Does not allocate per token once its
// buffer has grown to the longest token. `tok` must outlive the decoder.
class StreamDecoder {
  public:
    explicit StreamDecoder(const Tokenizer& tok, bool skip_special = true);

    // Newly completed text (valid until the next call on this decoder).
    std::string_view push(std::int32_t id);

    // Remaining bytes (an incomplete trailing sequence becomes one U+FFFD); resets the decoder.
    std::string_view finish();

  private:
    const Tokenizer* tok_;
    bool skip_special_;
    std::string out_;
    std::string joined_;  // pending bytes + the next token, when a sequence spans tokens
    unsigned char pending_[4] = {};
    int n_pending_ = 0;
};

}  // namespace qvl::text
