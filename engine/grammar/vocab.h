// The model's vocabulary as byte strings, arranged as a trie for the grammar matcher's token
// mask (grammar/matcher.h): byte-level BPE tokens are byte strings that may end in the middle
// of a UTF-8 character, so the mask walks bytes, and tokens that share a prefix share its walk.
// Immutable after construction; shared by every matcher of a model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "text/tokenizer.h"

namespace qvl::grammar {

class Vocab {
  public:
    // token_bytes[id]: the bytes token id stands for; empty for ids no grammar allows as text
    // (special tokens such as the end of a turn, padding rows).
    explicit Vocab(const std::vector<std::string>& token_bytes);

    // Trie nodes in depth-first preorder; node 0 is the root (the empty string).
    struct Node {
        std::int32_t skip = 0;    // the index just past this node's subtree
        std::int32_t tokens = 0;  // first of the ids ending here, in token_ids()
        std::int32_t n_tokens = 0;
        std::int32_t depth = 0;
        std::uint8_t byte = 0;  // the byte leading from the parent to this node
    };

    // Plain text: the code points 0x20-0x10FFFF except '"' and '\\' (a JSON string's
    // characters that need no escape). plain_chars(i) >= 0 when the path to node i ends on a
    // character boundary before its byte and every token in its subtree continues with plain
    // text only, as whole characters or a valid partial last one (the matcher's UTF-8 rules):
    // then it is the most characters any of them starts below that boundary. Inside a JSON
    // string the matcher takes such a subtree whole instead of walking it byte by byte.
    int plain_chars(std::size_t node) const { return plain_chars_[node]; }
    // The ids of the tokens in node i's subtree: token_ids()[subtree_tokens(i)...).
    std::pair<std::int32_t, std::int32_t> subtree_tokens(std::size_t node) const {
        return {first_token_[node], first_token_[std::size_t(nodes_[node].skip)]};
    }
    static constexpr std::uint32_t kPlainRanges[3][2] = {
        {0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}};

    int size() const { return size_; }
    int max_depth() const { return max_depth_; }
    std::span<const Node> nodes() const { return nodes_; }
    std::span<const std::int32_t> token_ids() const { return token_ids_; }
    const std::string& bytes(std::int32_t id) const { return bytes_[std::size_t(id)]; }

  private:
    void find_plain_subtrees();
    int size_ = 0;
    int max_depth_ = 0;
    std::vector<Node> nodes_;
    std::vector<std::int32_t> token_ids_;
    std::vector<std::string> bytes_;
    std::vector<std::int16_t> plain_chars_;  // per node, -1: not a plain subtree
    std::vector<std::int32_t> first_token_;  // per node, plus one past the last
};

// The vocabulary of a model with `vocab_size` logits rows: each id's bytes from the tokenizer,
// none for special tokens and for the rows past the tokenizer's ids.
std::shared_ptr<const Vocab> vocab_from_tokenizer(const text::Tokenizer& tok, int vocab_size);

}  // namespace qvl::grammar
