#include "text/bpe.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>

#include "base/check.h"

namespace qvl::text::detail {
namespace {

struct ByteLevelTables {
    char32_t to_cp[256];
    std::int16_t to_byte[512];  // the alphabet lies below U+0200
};

bool printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

const ByteLevelTables& tables() {
    static const ByteLevelTables t = [] {
        ByteLevelTables r{};
        std::fill(std::begin(r.to_byte), std::end(r.to_byte), std::int16_t(-1));
        int next = 0;
        for (int b = 0; b < 256; ++b) {
            r.to_cp[b] = printable(b) ? char32_t(b) : char32_t(256 + next++);
            r.to_byte[r.to_cp[b]] = std::int16_t(b);
        }
        return r;
    }();
    return t;
}

std::uint64_t load_tail(const char* p, std::size_t n) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, n);
    return w;
}

std::uint64_t next_pow2(std::uint64_t v) {
    std::uint64_t p = 16;
    while (p < v) p <<= 1;
    return p;
}

}  // namespace

std::uint64_t hash_bytes(std::string_view bytes) {
    constexpr std::uint64_t kMul = 0x9FB21C651E98DF25ull;
    std::uint64_t h = 0x243F6A8885A308D3ull ^ (bytes.size() * kMul);
    const char* p = bytes.data();
    std::size_t n = bytes.size();
    for (; n >= 8; n -= 8, p += 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * kMul;
        h ^= h >> 31;
    }
    if (n > 0) {
        h = (h ^ load_tail(p, n)) * kMul;
        h ^= h >> 31;
    }
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
    return h;
}

char32_t byte_level_codepoint(std::uint8_t byte) { return tables().to_cp[byte]; }

int byte_level_byte(char32_t cp) { return cp < 512 ? tables().to_byte[cp] : -1; }

bool byte_level_decode(std::string_view token, std::string& out) {
    out.clear();
    const auto& t = tables();
    const auto* p = reinterpret_cast<const unsigned char*>(token.data());
    const std::size_t n = token.size();
    for (std::size_t i = 0; i < n;) {
        char32_t cp;
        if (p[i] < 0x80) {
            cp = p[i];
            i += 1;
        } else if ((p[i] & 0xE0) == 0xC0 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
            cp = char32_t(p[i] & 0x1F) << 6 | char32_t(p[i + 1] & 0x3F);
            i += 2;
        } else {
            return false;  // every alphabet character is 1 or 2 UTF-8 bytes
        }
        const int b = cp < 512 ? t.to_byte[cp] : -1;
        if (b < 0) return false;
        out.push_back(char(b));
    }
    return true;
}

void byte_level_encode(std::string_view bytes, std::string& out) {
    for (const char c : bytes) {
        const char32_t cp = tables().to_cp[std::uint8_t(c)];
        if (cp < 0x80) {
            out.push_back(char(cp));
        } else {
            out.push_back(char(0xC0 | (cp >> 6)));
            out.push_back(char(0x80 | (cp & 0x3F)));
        }
    }
}

void TokenTable::reserve(std::size_t n_ids, std::size_t n_bytes) {
    entries_.reserve(n_ids);
    arena_.reserve(n_bytes);
}

bool TokenTable::add(std::int32_t id, std::string_view bytes, bool indexed) {
    QVL_CHECK(id >= 0, "token ids are validated by the caller");
    if (std::size_t(id) >= entries_.size()) entries_.resize(std::size_t(id) + 1);
    Entry& e = entries_[std::size_t(id)];
    if (e.defined) return false;
    e.offset = std::uint32_t(arena_.size());
    e.length = std::uint32_t(bytes.size());
    e.defined = true;
    e.indexed = indexed;
    arena_.append(bytes);
    return true;
}

void TokenTable::build_index() {
    std::size_t n_indexed = 0;
    for (const Entry& e : entries_) n_indexed += e.indexed ? 1 : 0;
    slots_.assign(next_pow2(n_indexed + n_indexed / 2 + 1), Slot{});  // load <= 2/3
    mask_ = slots_.size() - 1;
    // Hashes run kAhead entries in front of the inserts so the slot misses overlap.
    constexpr std::size_t kAhead = 16;
    std::vector<std::uint64_t> hashes(entries_.size());
    for (std::size_t id = 0; id < entries_.size() + kAhead; ++id) {
        if (id < entries_.size() && entries_[id].indexed) {
            hashes[id] = hash_bytes(bytes(std::int32_t(id)));
            __builtin_prefetch(&slots_[hashes[id] & mask_], 1);
        }
        if (id < kAhead || !entries_[id - kAhead].indexed) continue;
        const std::size_t k = id - kAhead;
        const std::string_view b = bytes(std::int32_t(k));
        std::uint64_t i = hashes[k] & mask_;
        while (slots_[i].id >= 0) i = (i + 1) & mask_;
        Slot& s = slots_[i];
        s.id = std::int32_t(k);
        s.length = std::uint8_t(std::min<std::size_t>(b.size(), 255));
        std::memcpy(s.head, b.data(), std::min(b.size(), kInline));
    }
}

std::int32_t TokenTable::find(std::string_view b, std::uint64_t hash) const {
    if (slots_.empty()) return -1;
    const auto length = std::uint8_t(std::min<std::size_t>(b.size(), 255));
    const std::size_t head = std::min(b.size(), kInline);
    for (std::uint64_t i = hash & mask_;; i = (i + 1) & mask_) {
        const Slot& s = slots_[i];
        if (s.id < 0) return -1;
        if (s.length == length && std::memcmp(s.head, b.data(), head) == 0 &&
            (b.size() <= kInline || bytes(s.id) == b)) {
            return s.id;
        }
    }
}

void MergeTable::reserve(std::size_t n) {
    slots_.assign(next_pow2(n + n / 2 + 1), Slot{});
    mask_ = slots_.size() - 1;
    count_ = 0;
}

void MergeTable::grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(16, old.size() * 2), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
        if (s.key == kEmpty) continue;
        std::uint64_t i = mix(s.key) & mask_;
        while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
        slots_[i] = s;
    }
}

bool MergeTable::insert(std::int32_t left, std::int32_t right, std::int32_t rank,
                        std::int32_t merged) {
    if (10 * (count_ + 1) > 7 * slots_.size()) grow();  // keep the load under 0.7
    const std::uint64_t key = pack(left, right);
    std::uint64_t i = mix(key) & mask_;
    for (; slots_[i].key != kEmpty; i = (i + 1) & mask_) {
        if (slots_[i].key == key) {
            slots_[i].merge = Merge{rank, merged};
            return false;
        }
    }
    slots_[i] = Slot{key, Merge{rank, merged}};
    ++count_;
    return true;
}

void bpe_merge_short(const MergeTable& merges, const std::array<std::int32_t, 256>& byte_ids,
                     std::string_view piece, BpeScratch& s, std::vector<std::int32_t>& out) {
    const std::size_t n = piece.size();
    if (n == 0) return;
    s.ids.resize(n);
    for (std::size_t i = 0; i < n; ++i) s.ids[i] = byte_ids[std::uint8_t(piece[i])];
    if (n == 1) {
        out.push_back(s.ids[0]);
        return;
    }
    std::int32_t* ids = s.ids.data();
    s.ranks.resize(n - 1);
    s.merged.resize(n - 1);
    std::int32_t* ranks = s.ranks.data();
    std::int32_t* merged = s.merged.data();
    auto set_pair = [&](std::size_t i) {
        const MergeTable::Merge* m = merges.find(ids[i], ids[i + 1]);
        ranks[i] = m ? m->rank : INT_MAX;
        merged[i] = m ? m->merged : -1;
    };
    for (std::size_t i = 0; i + 1 < n; ++i) set_pair(i);
    std::size_t m = n;  // live symbols
    while (m > 1) {
        std::size_t best = 0;
        for (std::size_t i = 1; i + 1 < m; ++i) {
            if (ranks[i] < ranks[best]) best = i;
        }
        if (ranks[best] == INT_MAX) break;
        ids[best] = merged[best];
        // Symbols best+2.. and pairs best+1.. move one slot left.
        std::memmove(ids + best + 1, ids + best + 2, (m - best - 2) * sizeof(std::int32_t));
        std::memmove(ranks + best, ranks + best + 1, (m - best - 2) * sizeof(std::int32_t));
        std::memmove(merged + best, merged + best + 1, (m - best - 2) * sizeof(std::int32_t));
        --m;
        if (best > 0) set_pair(best - 1);
        if (best + 1 < m) set_pair(best);
    }
    out.insert(out.end(), ids, ids + m);
}

void bpe_merge_heap(const MergeTable& merges, const std::array<std::int32_t, 256>& byte_ids,
                    std::string_view piece, BpeScratch& s, std::vector<std::int32_t>& out) {
    const auto n = std::int32_t(piece.size());
    if (n == 0) return;
    s.ids.resize(std::size_t(n));
    s.prev.resize(std::size_t(n));
    s.next.resize(std::size_t(n));
    std::int32_t* ids = s.ids.data();
    std::int32_t* prev = s.prev.data();
    std::int32_t* next = s.next.data();
    for (std::int32_t i = 0; i < n; ++i) {
        ids[i] = byte_ids[std::uint8_t(piece[std::size_t(i)])];
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    // Min-heap on (rank, pos): the lowest rank first, the leftmost among equal ranks. Entries
    // are not removed when a merge invalidates them; a popped entry is used only if its pair is
    // still there, i.e. the pair now at pos has the popped rank (ranks identify pairs).
    auto& heap = s.heap;
    heap.clear();
    const auto later = std::greater<std::uint64_t>();
    auto push_pair = [&](std::int32_t p) {
        const MergeTable::Merge* m = merges.find(ids[p], ids[next[p]]);
        if (m == nullptr) return;
        heap.push_back(std::uint64_t(std::uint32_t(m->rank)) << 32 | std::uint32_t(p));
        std::push_heap(heap.begin(), heap.end(), later);
    };
    for (std::int32_t i = 0; i + 1 < n; ++i) {
        if (const MergeTable::Merge* m = merges.find(ids[i], ids[i + 1])) {
            heap.push_back(std::uint64_t(std::uint32_t(m->rank)) << 32 | std::uint32_t(i));
        }
    }
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const std::uint64_t top = heap.back();
        heap.pop_back();
        const auto p = std::int32_t(top & 0xFFFFFFFFu);
        const std::int32_t q = next[p];
        if (ids[p] < 0 || q < 0) continue;  // p was absorbed, or is now the last symbol
        const MergeTable::Merge* m = merges.find(ids[p], ids[q]);
        if (m == nullptr || std::uint64_t(std::uint32_t(m->rank)) != top >> 32) continue;
        ids[p] = m->merged;
        ids[q] = -1;
        next[p] = next[q];
        if (next[q] >= 0) prev[next[q]] = p;
        if (prev[p] >= 0) push_pair(prev[p]);
        if (next[p] >= 0) push_pair(p);
    }
    for (std::int32_t i = 0; i >= 0; i = next[i]) out.push_back(ids[i]);
}

void bpe_merge(const MergeTable& merges, const std::array<std::int32_t, 256>& byte_ids,
               std::string_view piece, BpeScratch& scratch, std::vector<std::int32_t>& out) {
    if (piece.size() <= kShortPiece) {
        bpe_merge_short(merges, byte_ids, piece, scratch, out);
    } else {
        bpe_merge_heap(merges, byte_ids, piece, scratch, out);
    }
}

}  // namespace qvl::text::detail
