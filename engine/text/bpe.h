// Byte-level BPE building blocks (internal to engine/model, used by tokenizer.cpp and tests):
// the GPT-2 byte <-> printable-character alphabet, the id <-> bytes table, the merge table and
// the merge loop itself. Everything works on raw bytes; the byte-level alphabet only appears
// when reading tokenizer.json and in Tokenizer::token_id.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::text::detail {

// 64-bit hash of a byte string (fast, not cryptographic).
std::uint64_t hash_bytes(std::string_view bytes);

// GPT-2's ByteLevel alphabet: printable bytes map to themselves (as code points), the others to
// U+0100 + k in byte order. byte_level_byte(cp) is the inverse, -1 outside the alphabet.
char32_t byte_level_codepoint(std::uint8_t byte);
int byte_level_byte(char32_t cp);

// Converts a token as written in tokenizer.json (UTF-8 of alphabet characters) to raw bytes.
// Returns false (out unspecified) if it holds a character outside the alphabet or bad UTF-8.
bool byte_level_decode(std::string_view token, std::string& out);
// The inverse: raw bytes to their byte-level spelling (appended to out).
void byte_level_encode(std::string_view bytes, std::string& out);

// Ids to byte strings (all ids, including added tokens) plus a hash index bytes -> id that only
// covers the entries added with `indexed` (the BPE vocab; added tokens are matched elsewhere).
class TokenTable {
  public:
    // Defines `id`; false if it was already defined. Ids may be added in any order.
    bool add(std::int32_t id, std::string_view bytes, bool indexed);
    // Builds the hash index; call once after the last add().
    void build_index();
    // Id of an indexed byte string, or -1.
    std::int32_t find(std::string_view bytes) const { return find(bytes, hash_bytes(bytes)); }
    // The same with hash_bytes(bytes) precomputed, and a prefetch of its slot (bulk lookups
    // overlap their cache misses this way).
    std::int32_t find(std::string_view bytes, std::uint64_t hash) const;
    void prefetch(std::uint64_t hash) const {
        if (!slots_.empty()) __builtin_prefetch(&slots_[hash & mask_]);
    }
    // Bytes of `id`, empty for undefined ids (check defined()).
    std::string_view bytes(std::int32_t id) const {
        const Entry& e = entries_[std::size_t(id)];
        return {arena_.data() + e.offset, e.length};
    }
    bool defined(std::int32_t id) const {
        return id >= 0 && std::size_t(id) < entries_.size() && entries_[std::size_t(id)].defined;
    }
    // 1 + the largest defined id.
    int size() const { return int(entries_.size()); }
    void reserve(std::size_t n_ids, std::size_t n_bytes);

  private:
    struct Entry {
        std::uint32_t offset = 0;
        std::uint32_t length = 0;
        bool defined = false;
        bool indexed = false;
    };
    // 16 bytes: short tokens (most of a BPE vocab) compare without leaving the slot.
    static constexpr std::size_t kInline = 11;
    struct Slot {
        std::int32_t id = -1;
        std::uint8_t length = 0;  // min(length, 255)
        char head[kInline] = {};
    };
    std::string arena_;
    std::vector<Entry> entries_;
    std::vector<Slot> slots_;  // open addressing, power-of-two size
    std::uint64_t mask_ = 0;
};

// (left id, right id) -> (rank, merged id).
class MergeTable {
  public:
    struct Merge {
        std::int32_t rank;
        std::int32_t merged;
    };
    void reserve(std::size_t n);
    // Inserts or overwrites; false if the pair was already present (HF collects merges into a
    // map, so a repeated pair keeps its last rank).
    bool insert(std::int32_t left, std::int32_t right, std::int32_t rank, std::int32_t merged);
    void prefetch(std::int32_t left, std::int32_t right) const {
        if (!slots_.empty()) __builtin_prefetch(&slots_[mix(pack(left, right)) & mask_]);
    }
    // The merge of (left, right), or nullptr.
    const Merge* find(std::int32_t left, std::int32_t right) const {
        const std::uint64_t key = pack(left, right);
        for (std::uint64_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.key == key) return &s.merge;
            if (s.key == kEmpty) return nullptr;
        }
    }
    std::size_t size() const { return count_; }

  private:
    static constexpr std::uint64_t kEmpty = ~std::uint64_t(0);
    static std::uint64_t pack(std::int32_t a, std::int32_t b) {
        return (std::uint64_t(std::uint32_t(a)) << 32) | std::uint32_t(b);
    }
    static std::uint64_t mix(std::uint64_t k) {
        k ^= k >> 29;
        k *= 0xBF58476D1CE4E5B9ull;
        k ^= k >> 32;
        return k;
    }
    void grow();
    struct Slot {
        std::uint64_t key = kEmpty;
        Merge merge{};
    };
    std::vector<Slot> slots_;
    std::uint64_t mask_ = 0;
    std::size_t count_ = 0;
};

// Reusable buffers for bpe_merge (one per encode call; not shared between threads).
struct BpeScratch {
    std::vector<std::int32_t> ids, prev, next, ranks, merged;
    std::vector<std::uint64_t> heap;  // (rank << 32 | left position), smallest first
};

// BPE of one pre-token: starts from one symbol per byte (byte_ids[b]) and repeatedly applies
// the lowest-rank merge among adjacent pairs, leftmost first on ties (HF tokenizers'
// BPE::merge_word). Appends the final ids to `out`. O(n^2) for short pieces (cheaper there),
// O(n log n) with a heap above kShortPiece bytes.
inline constexpr std::size_t kShortPiece = 48;
void bpe_merge(const MergeTable& merges, const std::array<std::int32_t, 256>& byte_ids,
               std::string_view piece, BpeScratch& scratch, std::vector<std::int32_t>& out);
// The two strategies, exposed for tests (bpe_merge picks one by length).
void bpe_merge_short(const MergeTable& merges, const std::array<std::int32_t, 256>& byte_ids,
                     std::string_view piece, BpeScratch& scratch, std::vector<std::int32_t>& out);
void bpe_merge_heap(const MergeTable& merges, const std::array<std::int32_t, 256>& byte_ids,
                    std::string_view piece, BpeScratch& scratch, std::vector<std::int32_t>& out);

}  // namespace qvl::text::detail
