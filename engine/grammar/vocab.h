// The model's vocabulary as byte strings, arranged as a trie for the grammar matcher's token
// mask (grammar/matcher.h): byte-level BPE tokens are byte strings that may end in the middle
// of a UTF-8 character, so the mask walks bytes, and tokens that share a prefix share its walk.
// Immutable after construction; shared by every matcher of a model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
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

    int size() const { return size_; }
    int max_depth() const { return max_depth_; }
    std::span<const Node> nodes() const { return nodes_; }
    std::span<const std::int32_t> token_ids() const { return token_ids_; }
    const std::string& bytes(std::int32_t id) const { return bytes_[std::size_t(id)]; }

  private:
    int size_ = 0;
    int max_depth_ = 0;
    std::vector<Node> nodes_;
    std::vector<std::int32_t> token_ids_;
    std::vector<std::string> bytes_;
};

// The vocabulary of a model with `vocab_size` logits rows: each id's bytes from the tokenizer,
// none for special tokens and for the rows past the tokenizer's ids.
std::shared_ptr<const Vocab> vocab_from_tokenizer(const text::Tokenizer& tok, int vocab_size);

}  // namespace qvl::grammar
