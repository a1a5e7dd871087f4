// BPE internals: both merge strategies against a plain string-based reference on random merge
// tables (including ranks that are not in creation order), the byte-level alphabet, the tables.
#include "text/bpe.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "text/utf8.h"

namespace qvl::text::detail {
namespace {

struct RandomBpe {
    TokenTable tokens;
    MergeTable merges;
    std::array<std::int32_t, 256> byte_ids{};
    std::map<std::pair<std::string, std::string>, int> ranks;  // for the reference
    std::vector<std::string> strings;                          // id -> bytes
};

RandomBpe make_random_bpe(std::uint32_t seed, int n_merges, bool shuffle_ranks) {
    RandomBpe b;
    for (int i = 0; i < 256; ++i) {
        b.strings.emplace_back(1, char(i));
        b.byte_ids[std::size_t(i)] = i;
    }
    std::mt19937 rng(seed);
    const std::string alphabet = "abcd";
    std::vector<std::pair<int, int>> pairs;
    std::set<std::string> seen(b.strings.begin(), b.strings.end());
    std::vector<int> pool = {'a', 'b', 'c', 'd'};
    while (int(pairs.size()) < n_merges) {
        const int l = pool[rng() % pool.size()], r = pool[rng() % pool.size()];
        const std::string s = b.strings[std::size_t(l)] + b.strings[std::size_t(r)];
        if (s.size() > 12 || !seen.insert(s).second) continue;
        pairs.emplace_back(l, r);
        pool.push_back(int(b.strings.size()));
        b.strings.push_back(s);
    }
    std::vector<int> rank(pairs.size());
    for (std::size_t i = 0; i < rank.size(); ++i) rank[i] = int(i);
    if (shuffle_ranks) std::shuffle(rank.begin(), rank.end(), rng);
    for (std::size_t i = 0; i < b.strings.size(); ++i) {
        b.tokens.add(std::int32_t(i), b.strings[i], true);
    }
    b.tokens.build_index();
    b.merges.reserve(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        const auto [l, r] = pairs[i];
        b.merges.insert(l, r, rank[i], std::int32_t(256 + i));
        b.ranks[{b.strings[std::size_t(l)], b.strings[std::size_t(r)]}] = rank[i];
    }
    return b;
}

// Textbook BPE on strings: apply the lowest-rank adjacent pair, leftmost first, until none.
std::vector<std::string> reference_bpe(const RandomBpe& b, const std::string& word) {
    std::vector<std::string> sym;
    for (const char c : word) sym.emplace_back(1, c);
    for (;;) {
        int best = -1, best_rank = 0;
        for (std::size_t i = 0; i + 1 < sym.size(); ++i) {
            const auto it = b.ranks.find({sym[i], sym[i + 1]});
            if (it != b.ranks.end() && (best < 0 || it->second < best_rank)) {
                best = int(i);
                best_rank = it->second;
            }
        }
        if (best < 0) return sym;
        sym[std::size_t(best)] += sym[std::size_t(best) + 1];
        sym.erase(sym.begin() + best + 1);
    }
}

TEST(Bpe, BothStrategiesMatchTheReference) {
    for (const bool shuffled : {false, true}) {
        const RandomBpe b = make_random_bpe(shuffled ? 11 : 5, 300, shuffled);
        std::mt19937 rng(99);
        BpeScratch scratch;
        for (int trial = 0; trial < 200; ++trial) {
            const std::size_t len = std::size_t(
                trial < 50 ? trial + 1
                           : std::vector<int>{1, 3, 7, 16, 17, 31, 100, 300}[trial % 8]);
            std::string word;
            for (std::size_t i = 0; i < len; ++i) word += "abcdx"[rng() % (trial % 3 ? 4 : 5)];
            std::vector<std::string> expect_str = reference_bpe(b, word);
            std::vector<std::int32_t> expect;
            for (const std::string& s : expect_str) expect.push_back(b.tokens.find(s));
            std::vector<std::int32_t> short_ids, heap_ids, auto_ids;
            bpe_merge_short(b.merges, b.byte_ids, word, scratch, short_ids);
            bpe_merge_heap(b.merges, b.byte_ids, word, scratch, heap_ids);
            bpe_merge(b.merges, b.byte_ids, word, scratch, auto_ids);
            ASSERT_EQ(short_ids, expect) << word;
            ASSERT_EQ(heap_ids, expect) << word;
            ASSERT_EQ(auto_ids, expect) << word;
        }
    }
}

// A long pre-token (a 100 KiB word) must take the heap strategy, whose work is bounded by its
// pushes: n - 1 initial pairs plus at most two per merge (< n merges), so the heap never holds
// more than 3n entries; the quadratic scan is for pieces of at most kShortPiece bytes. Counted
// from the scratch buffers each strategy uses, so the check is the same on any machine and
// under the sanitizers (a wall-clock bound was neither).
TEST(Bpe, LongPiecesTakeTheHeapPath) {
    const RandomBpe b = make_random_bpe(5, 300, true);
    std::mt19937 rng(3);
    for (const std::size_t n : {kShortPiece + 1, std::size_t(1000), std::size_t(100 * 1024)}) {
        std::string word;
        for (std::size_t i = 0; i < n; ++i) word += "abcd"[rng() % 4];
        BpeScratch scratch;
        std::vector<std::int32_t> ids;
        bpe_merge(b.merges, b.byte_ids, word, scratch, ids);
        EXPECT_EQ(scratch.next.size(), n) << "the heap strategy did not run";
        EXPECT_TRUE(scratch.ranks.empty()) << "the quadratic strategy ran on " << n << " bytes";
        EXPECT_LE(scratch.heap.capacity(), 6 * n) << "more than 3n heap entries for " << n;
        EXPECT_LT(ids.size(), n);
        if (n <= 1000) {
            std::vector<std::int32_t> short_ids;
            bpe_merge_short(b.merges, b.byte_ids, word, scratch, short_ids);
            EXPECT_EQ(ids, short_ids);
        }
    }
    BpeScratch scratch;
    std::vector<std::int32_t> ids;
    bpe_merge(b.merges, b.byte_ids, std::string(kShortPiece, 'a'), scratch, ids);
    EXPECT_TRUE(scratch.next.empty()) << "a short piece took the heap strategy";
}

TEST(Bpe, ByteLevelAlphabetIsABijection) {
    std::set<char32_t> seen;
    for (int b = 0; b < 256; ++b) {
        const char32_t cp = byte_level_codepoint(std::uint8_t(b));
        EXPECT_TRUE(seen.insert(cp).second);
        EXPECT_EQ(byte_level_byte(cp), b);
    }
    EXPECT_EQ(byte_level_codepoint(' '), U'\u0120');   // "Ġ"
    EXPECT_EQ(byte_level_codepoint('\n'), U'\u010A');  // "Ċ"
    EXPECT_EQ(byte_level_codepoint('a'), U'a');
    EXPECT_EQ(byte_level_byte(U'\u4E2D'), -1);
    std::string all, spelled, back;
    for (int b = 0; b < 256; ++b) all.push_back(char(b));
    byte_level_encode(all, spelled);
    ASSERT_TRUE(byte_level_decode(spelled, back));
    EXPECT_EQ(back, all);
    EXPECT_FALSE(byte_level_decode("\xE4\xB8\xAD", back));  // a CJK character is not spelled
}

TEST(Bpe, TablesFindWhatWasAdded) {
    TokenTable t;
    const std::vector<std::string> words = {
        "a", "", "abcdefghijk", "abcdefghijkl", std::string(300, 'z'), std::string(300, 'y')};
    for (std::size_t i = 0; i < words.size(); ++i) {
        EXPECT_TRUE(t.add(std::int32_t(2 * i), words[i], true));
    }
    EXPECT_FALSE(t.add(0, "again", true));
    EXPECT_TRUE(t.add(1, "not indexed", false));
    t.build_index();
    for (std::size_t i = 0; i < words.size(); ++i) EXPECT_EQ(t.find(words[i]), 2 * int(i));
    EXPECT_EQ(t.find("abcdefghijkX"), -1);
    EXPECT_EQ(t.find("not indexed"), -1);
    EXPECT_EQ(t.find(std::string(300, 'x')), -1);
    EXPECT_TRUE(t.defined(1));
    EXPECT_FALSE(t.defined(3));
    EXPECT_FALSE(t.defined(-1));
    EXPECT_EQ(t.size(), 11);

    MergeTable m;
    for (int i = 0; i < 1000; ++i) m.insert(i, i + 1, i, 5000 + i);  // grows from empty
    EXPECT_FALSE(m.insert(3, 4, 77, 88));                            // the last rank wins
    EXPECT_EQ(m.size(), 1000u);
    EXPECT_EQ(m.find(3, 4)->rank, 77);
    EXPECT_EQ(m.find(999, 1000)->merged, 5999);
    EXPECT_EQ(m.find(4, 3), nullptr);
}

TEST(Utf8, LossyConversionReplacesMaximalSubparts) {
    std::string out;
    EXPECT_EQ(append_utf8_lossy(out, "a\xF0\x9F\x98", false), 1u);  // held back
    EXPECT_EQ(out, "a");
    out.clear();
    append_utf8_lossy(out, "a\xF0\x9F\x98", true);
    EXPECT_EQ(out, "a\xEF\xBF\xBD");
    out.clear();
    // Overlong, surrogate, out of range, lone continuation: one U+FFFD per bad byte here.
    append_utf8_lossy(out, "\xC0\xAF|\xED\xA0\x80|\xF4\x90|\x80", true);
    const std::string r = "\xEF\xBF\xBD";
    EXPECT_EQ(out, r + r + "|" + r + r + r + "|" + r + r + "|" + r);
    EXPECT_EQ(find_invalid_utf8("ok \xE2\x82\xAC"), std::string_view::npos);
    EXPECT_EQ(find_invalid_utf8("ok \xE2\x82"), 3u);
}

}  // namespace
}  // namespace qvl::text::detail
