#include "grammar/vocab.h"

#include <algorithm>
#include <numeric>
#include <string_view>

namespace qvl::grammar {

Vocab::Vocab(const std::vector<std::string>& token_bytes)
    : size_(int(token_bytes.size())), bytes_(token_bytes) {
    std::vector<std::int32_t> order;
    for (std::size_t id = 0; id < token_bytes.size(); ++id) {
        if (!token_bytes[id].empty()) order.push_back(std::int32_t(id));
    }
    // Sorted byte strings: each string's nodes follow its longest common prefix with the
    // previous one, which yields the preorder; equal strings end on the same node.
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
        return token_bytes[std::size_t(a)] < token_bytes[std::size_t(b)];
    });
    nodes_.push_back(Node{});
    std::vector<std::int32_t> path{0};  // path[d]: the node at depth d of the current string
    std::string_view prev;
    for (const std::int32_t id : order) {
        const std::string_view s = token_bytes[std::size_t(id)];
        std::size_t common = 0;
        while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
        while (path.size() > common + 1) {
            nodes_[std::size_t(path.back())].skip = std::int32_t(nodes_.size());
            path.pop_back();
        }
        for (std::size_t d = common; d < s.size(); ++d) {
            Node n;
            n.depth = std::int32_t(d + 1);
            n.byte = static_cast<std::uint8_t>(s[d]);
            path.push_back(std::int32_t(nodes_.size()));
            nodes_.push_back(n);
        }
        Node& end = nodes_[std::size_t(path.back())];
        if (end.n_tokens == 0) end.tokens = std::int32_t(token_ids_.size());
        ++end.n_tokens;
        token_ids_.push_back(id);
        max_depth_ = std::max(max_depth_, int(s.size()));
        prev = s;
    }
    for (const std::int32_t n : path) nodes_[std::size_t(n)].skip = std::int32_t(nodes_.size());
}

std::shared_ptr<const Vocab> vocab_from_tokenizer(const text::Tokenizer& tok, int vocab_size) {
    std::vector<std::string> bytes(std::size_t(std::max(vocab_size, 0)));
    for (int id = 0; id < vocab_size && id < tok.vocab_size(); ++id) {
        if (!tok.is_special(id)) bytes[std::size_t(id)] = std::string(tok.token_bytes(id));
    }
    return std::make_shared<const Vocab>(bytes);
}

}  // namespace qvl::grammar
