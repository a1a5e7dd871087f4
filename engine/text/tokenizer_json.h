// The tables of a Hugging Face tokenizer.json as the tokenizer needs them (internal to
// engine/model): vocab and added tokens by id, the merge table, and the pre-tokenizer regex as
// text (tokenizer.cpp compiles it).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "text/bpe.h"

namespace qvl::text::detail {

struct AddedToken {
    std::string content;
    std::int32_t id;
};

struct TokenizerTables {
    TokenTable tokens;  // every id; the BPE vocab is the indexed part
    MergeTable merges;
    std::array<std::int32_t, 256> byte_ids{};  // the vocab token of each single byte
    std::vector<AddedToken> added;             // longest first: the first hit at a position wins
    std::array<bool, 256> added_first_byte{};
    std::vector<std::uint8_t> special;  // per id: 1 for added tokens with special=true
    bool nfc = false;                   // normalizer NFC
    bool ignore_merges = false;         // model.ignore_merges: whole-word vocab hits first
    std::string split_pattern;          // the Split pre-tokenizer's regex (Isolated)
};

// Fills `t` from the file. Missing: kNotFound; bad JSON or inconsistent tables (unknown merge
// parts, ids used twice, no token for some byte): kCorruptFile; another model type, normalizer,
// pre-tokenizer or decoder: kUnsupported. Messages start with the path, then the JSON key.
base::Status read_tokenizer_json(const std::filesystem::path& path, TokenizerTables& t);

}  // namespace qvl::text::detail
