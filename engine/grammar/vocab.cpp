#include "grammar/vocab.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string_view>

namespace qvl::grammar {

namespace {

// The UTF-8 state after a node's byte, by the matcher's rules (Matcher::step).
struct Utf8 {
    std::uint32_t cp = 0;
    int need = 0, len = 0;
    bool ok = true;       // the bytes so far are plain text (see Vocab::plain_chars)
    bool starts = false;  // this byte starts a character
};

Utf8 next_utf8(const Utf8& f, std::uint8_t byte) {
    Utf8 t;
    if (!f.ok) return {.ok = false};
    if (f.need == 0) {
        t.starts = true;
        if (byte < 0x80) {
            t.ok = byte >= 0x20 && byte != '"' && byte != '\\';
            return t;
        }
        t.len = byte >= 0xC2 && byte <= 0xDF   ? 2
                : byte >= 0xE0 && byte <= 0xEF ? 3
                : byte >= 0xF0 && byte <= 0xF4 ? 4
                                               : 0;
        if (t.len == 0) return {.ok = false};
        t.cp = byte & (0x7Fu >> t.len);
        t.need = t.len - 1;
    } else {
        if ((byte & 0xC0) != 0x80) return {.ok = false};
        t.cp = (f.cp << 6) | (byte & 0x3Fu);
        t.need = f.need - 1;
        t.len = f.len;
    }
    const std::uint32_t least = t.len == 2 ? 0x80 : t.len == 3 ? 0x800 : 0x10000;
    if (t.need > 0) {
        const std::uint32_t hi = (t.cp << (6 * t.need)) | ((1u << (6 * t.need)) - 1);
        const std::uint32_t lo = std::max(t.cp << (6 * t.need), least);
        t.ok = lo <= hi && lo <= 0x10FFFF;
    } else {
        t.ok = t.cp >= least && t.cp <= 0x10FFFF;
    }
    return t;
}

}  // namespace

void Vocab::find_plain_subtrees() {
    const std::size_t n = nodes_.size();
    std::vector<Utf8> state(n);
    std::vector<std::int32_t> parent(n, -1);
    std::vector<std::int32_t> path{0};
    for (std::size_t i = 1; i < n; ++i) {
        path.resize(std::size_t(nodes_[i].depth));
        parent[i] = path.back();
        state[i] = next_utf8(state[std::size_t(parent[i])], nodes_[i].byte);
        path.push_back(std::int32_t(i));
    }
    // Children come after their parent in preorder: fold each subtree into its parent from the
    // back. below[i]: most characters started in i's subtree from i's byte on; -1: not plain.
    std::vector<std::int32_t> below(n, 0);
    for (std::size_t i = n - 1; i >= 1; --i) {
        if (!state[i].ok) below[i] = -1;
        if (below[i] >= 0) below[i] += state[i].starts ? 1 : 0;
        std::int32_t& up = below[std::size_t(parent[i])];
        if (up >= 0) up = below[i] < 0 ? -1 : std::max(up, below[i]);
    }
    plain_chars_.assign(n, -1);
    for (std::size_t i = 1; i < n; ++i) {
        const bool at_boundary = state[std::size_t(parent[i])].need == 0;
        if (at_boundary && below[i] >= 0 && below[i] <= INT16_MAX)
            plain_chars_[i] = std::int16_t(below[i]);
    }
}

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
    first_token_.push_back(0);
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
            first_token_.push_back(std::int32_t(token_ids_.size()));
        }
        Node& end = nodes_[std::size_t(path.back())];
        if (end.n_tokens == 0) end.tokens = std::int32_t(token_ids_.size());
        ++end.n_tokens;
        token_ids_.push_back(id);
        max_depth_ = std::max(max_depth_, int(s.size()));
        prev = s;
    }
    for (const std::int32_t n : path) nodes_[std::size_t(n)].skip = std::int32_t(nodes_.size());
    first_token_.push_back(std::int32_t(token_ids_.size()));
    find_plain_subtrees();
}

std::shared_ptr<const Vocab> vocab_from_tokenizer(const text::Tokenizer& tok, int vocab_size) {
    std::vector<std::string> bytes(std::size_t(std::max(vocab_size, 0)));
    for (int id = 0; id < vocab_size && id < tok.vocab_size(); ++id) {
        if (!tok.is_special(id)) bytes[std::size_t(id)] = std::string(tok.token_bytes(id));
    }
    return std::make_shared<const Vocab>(bytes);
}

}  // namespace qvl::grammar
