// Flash attention for the AVX2 tier (kernels/attention.h): tiles of 6 query rows against
// 64-key blocks, online softmax in the log2 domain, f32 products and accumulation.
//
// Per task (one kv head, a block of query rows) the keys it will read are repacked once:
// V copied dense ([key][head_dim]) and K either transposed per 64-key block ([d][64 keys]) so
// that scores are broadcast-FMAs over rows of Kt, or, for incremental attention
// (AttentionArgs::incremental: the text decoder's KV cache), dense like V, with scores taken
// with head_dim in lanes (scores4x3 below). Each tile keeps 6 x 16 scores or 6 x 16 outputs in
// 12 ymm accumulators: two loads and six broadcasts feed twelve FMAs (head_dim in lanes: 3 x 4
// scores, seven loads). Batches of 8 tiles take the keys in L2-sized chunks, each chunk read by
// every tile of the batch in turn.
//
// Key blocks sit at absolute multiples of 64 and every row is computed on its own (masks,
// running max and sum per row), so a row's result does not depend on which task or tile it
// fell into: identical for any thread count. Decode (one query row of incremental attention)
// reads K and V in place, once for each pair of query heads, since repacking them would only
// add traffic; it computes every row exactly as the tiles do, so a decoded row equals the same
// row of a prefill. That is why incremental scores put head_dim in lanes: with keys in lanes a
// single row could only feed its FMAs through 8 x 8 transposes of K, and decode ran at a third
// of the memory bandwidth. One row of other attention runs as a one-row tile.
// bf16 K/V are widened (exactly) where they are read: in the repacking, and at decode's loads.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_plan.h"
#include "kernels/scratch.h"
#include "kernels/simd/attention_simd.h"
#include "kernels/x86/prefetch_rows.h"
#include "kernels/x86/tier_entries.h"

namespace qvl::kernels::avx2 {
namespace {

constexpr int kRows = 6;   // query rows per tile
constexpr int kKeys = 64;  // keys per block
constexpr int kMaxHd = 256;
constexpr int kTileBatch = 8;  // tiles that share each pass over the packed keys
constexpr float kLog2e = 1.4426950408889634f;

// 2^x for x <= 0 (scores minus their running max): 2^n by the exponent bits, 2^f (|f| <= 1/2)
// by a degree-6 polynomial (relative error ~1e-7) with constant term exactly 1, so a block
// that leaves the max unchanged rescales by exactly 1. Below -126 the result is clamped to
// 2^-126 * 2^f; callers zero masked lanes themselves.
inline __m256 exp2_ps(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-126.0f));
    const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(x, n);
    __m256 p = _mm256_set1_ps(1.5345591236837208e-04f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3399904128164053e-03f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.618490003049374e-03f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.550329014658928e-02f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022646248340607e-01f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.931471824645996e-01f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 r = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    // Opaque to the optimiser: C++ allows GCC to fuse this product into a later addition (a
    // sum of weights) in some callers and not others, which would make decode rows differ
    // from prefill rows in the last bit.
    __asm__("" : "+x"(r));
    return r;
}

// K/V elements widened to f32: the identity for f32, a 16-bit shift for bf16 (exact).
inline float widen(float x) { return x; }
inline float widen(std::uint16_t x) { return std::bit_cast<float>(std::uint32_t(x) << 16); }
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const std::uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Lane order of K rows (and query rows) in incremental attention: each complete 16-dim chunk
// sits as [even dims, odd dims]; a last chunk of 8 stays in order. It is what bf16 rows give
// cheapest: one 32-byte load, then the dwords shifted left by 16 are the even dims and masked
// to their high halves the odd dims, one integer op per 8 dims (widening in order took a
// zero-extension and a shift per 8 dims, both on Zen 1's one shuffle pipe: twice the
// micro-ops). f32 rows take the same order (two shuffles and two lane permutes per 16 dims, in
// decode only; the tiles repack K in lane order once per task), so a result does not depend on
// the K element type.
inline int lane_position(int d, int hd) {
    const int c = d & ~15;
    if (c + 16 > hd) return d;
    return c + (d & 1) * 8 + ((d & 15) >> 1);
}

// Dims [c, c + 16) of a row in lane order: even dims, then odd dims.
inline void load16_lanes(const std::uint16_t* row, int c, __m256* even, __m256* odd) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c));
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(int(0xFFFF0000u))));
}
inline void load16_lanes(const float* row, int c, __m256* even, __m256* odd) {
    const __m256 a = _mm256_loadu_ps(row + c), b = _mm256_loadu_ps(row + c + 8);
    // [a0 a2 b0 b2 | a4 a6 b4 b6] -> 64-bit quarters 0, 2, 1, 3: [a0 a2 a4 a6 b0 b2 b4 b6].
    const auto quarters = [](__m256 v) {
        return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
    };
    *even = quarters(_mm256_shuffle_ps(a, b, 0x88));
    *odd = quarters(_mm256_shuffle_ps(a, b, 0xDD));
}

// Decode's V rows: bf16 ones in lane order too (load16_lanes), f32 ones in order. A dim's sum
// is the same whatever lane holds it; v_position says where dim d of the output ends up.
template <class E>
inline int v_position(int d, int hd) {
    return std::is_same_v<E, float> ? d : lane_position(d, hd);
}
inline __m256 load8_v(const float* row, int c, int /*hd*/) { return load8(row + c); }
inline __m256 load8_v(const std::uint16_t* row, int c, int hd) {
    const int c16 = c & ~15;
    if (c16 + 16 > hd) return load8(row + c);
    __m256 even, odd;
    load16_lanes(row, c16, &even, &odd);
    return c == c16 ? even : odd;
}

// Scores with head_dim in lanes (incremental attention): lane x of a key's accumulator sums
// q * k over lane position x of each 8-position chunk, chunk by chunk from zero, then each key's
// eight lanes add up along one fixed tree, ((0+1)+(2+3))+((4+5)+(6+7)) (two vhaddps, then the
// halves). Tiles and decode compute every score this way, so their rows agree to the bit.
inline __m128 reduce_keys4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

// s[r][0..4) = scores of the query rows q[r] (r < R <= 2; f32 in lane order, 32-byte aligned,
// already scaled) against the key rows k[0..4) (hd % 8 == 0 elements each, float or bf16 bits,
// in dim order: put in lane order as they load). Decode's form; the tiles use scores4x3.
template <int R, class E>
[[gnu::always_inline]] inline void scores4(const float* const (&q)[R], const E* const (&k)[4],
                                           int hd, float* const (&s)[R]) {
    __m256 acc[R][4];
    for (auto& row : acc) {
        for (auto& x : row) x = _mm256_setzero_ps();
    }
    int c = 0;
    for (; c + 16 <= hd; c += 16) {
        __m256 qe[R], qo[R];
        for (int r = 0; r < R; ++r) {
            qe[r] = _mm256_load_ps(q[r] + c);
            qo[r] = _mm256_load_ps(q[r] + c + 8);
        }
        for (int x = 0; x < 4; ++x) {
            __m256 even, odd;
            load16_lanes(k[x], c, &even, &odd);
            for (int r = 0; r < R; ++r) acc[r][x] = _mm256_fmadd_ps(qe[r], even, acc[r][x]);
            for (int r = 0; r < R; ++r) acc[r][x] = _mm256_fmadd_ps(qo[r], odd, acc[r][x]);
        }
    }
    if (c < hd) {  // a last chunk of 8 dims, in order
        __m256 kc[4];
        for (int x = 0; x < 4; ++x) kc[x] = load8(k[x] + c);
        for (int r = 0; r < R; ++r) {
            const __m256 qc = _mm256_load_ps(q[r] + c);
            for (int x = 0; x < 4; ++x) acc[r][x] = _mm256_fmadd_ps(qc, kc[x], acc[r][x]);
        }
    }
    for (int r = 0; r < R; ++r) {
        _mm_storeu_ps(s[r], reduce_keys4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
    }
}

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

// 8 x 8 transpose in registers: r[i] holds row i on entry, column i on return.
inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    // u[4 g + c]: rows 4g..4g+3 of column c (low 128 bits) and c + 4 (high).
    for (int g = 0; g < 8; g += 4) {
        u[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
        u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
        u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

// The rescale of a row's output when its running max goes from m_old to m_new, lane for lane
// what tile_softmax computes: 1 while nothing has been seen, 0 for the first keys, else
// exp2_ps(m_old - m_new).
inline float rescale(float m_old, float m_new) {
    if (m_new == -INFINITY) return 1.0f;
    if (m_old == -INFINITY) return 0.0f;
    return _mm256_cvtss_f32(exp2_ps(_mm256_set1_ps(m_old - m_new)));
}

// Rows asked for ahead of the one being repacked (x86/prefetch_rows.h): without these requests,
// waiting for K/V and query rows was most of the 8-10 % of a vision task's time spent outside
// the tiles (perf, N = 784).
constexpr int kRowsAhead = 16;

// The keys of one task, repacked: block b holds absolute keys [64 (first + b), +64).
struct PackedKV {
    // Per block [head_dim][64] (transposed) or, with k_rows (incremental attention), rows
    // [key - 64 first][head_dim] in lane order.
    const float* k = nullptr;
    bool k_rows = false;
    const float* v = nullptr;  // [key - 64 first][head_dim]
    int first = 0;             // first block (absolute key / 64)
};

// A K row as floats in lane order (lane_position).
template <class E>
void widen_row_lanes(const E* src, int hd, float* dst) {
    int c = 0;
    for (; c + 16 <= hd; c += 16) {
        __m256 even, odd;
        load16_lanes(src, c, &even, &odd);
        _mm256_storeu_ps(dst + c, even);
        _mm256_storeu_ps(dst + c + 8, odd);
    }
    if (c < hd) _mm256_storeu_ps(dst + c, load8(src + c));
}

// Repacks keys [key_lo, key_hi) of kv head g (elements E: float or bf16 bits), K transposed
// per block or, for incremental attention, dense; keys of the covered blocks outside that range
// are zero (their weights are masked to exactly zero, and 0 * 0 adds nothing).
template <class E>
PackedKV pack_kv(const AttentionArgs& a, int g, int key_lo, int key_hi) {
    const int hd = a.head_dim;
    const int first = key_lo / kKeys;
    const int n_blocks = (key_hi + kKeys - 1) / kKeys - first;
    const std::size_t block_floats = std::size_t(kKeys) * hd;
    auto* kt = static_cast<float*>(detail::thread_scratch(
        detail::kScratchAttentionKV, 2 * sizeof(float) * block_floats * std::size_t(n_blocks)));
    float* v = kt + block_floats * n_blocks;
    const E* kg = static_cast<const E*>(a.k) + g * a.k_head_stride;
    const E* vg = static_cast<const E*>(a.v) + g * a.v_head_stride;
    auto visible = [&](int key) { return key >= key_lo && key < key_hi; };
    for (int b = 0; b < n_blocks; ++b) {
        float* ktb = kt + block_floats * b;
        float* vb = v + block_floats * b;
        const int j0 = (first + b) * kKeys;
        for (int j8 = 0; j8 < kKeys; j8 += 8) {  // 8 keys at a time
            for (int j = j8; j < j8 + 8; ++j) {  // V rows (and incremental K rows) as they are
                const int key = j0 + j;
                float* vrow = vb + std::ptrdiff_t(j) * hd;
                float* krow = ktb + std::ptrdiff_t(j) * hd;
                if (!visible(key)) {
                    std::fill(vrow, vrow + hd, 0.0f);
                    if (a.incremental) std::fill(krow, krow + hd, 0.0f);
                    continue;
                }
                x86::prefetch_rows(kg, a.k_row_stride, key + kRowsAhead, key + kRowsAhead + 1,
                                   key_hi, hd);
                x86::prefetch_rows(vg, a.v_row_stride, key + kRowsAhead, key + kRowsAhead + 1,
                                   key_hi, hd);
                const E* vsrc = vg + std::ptrdiff_t(key) * a.v_row_stride;
                for (int d = 0; d < hd; ++d) vrow[d] = widen(vsrc[d]);
                if (a.incremental)
                    widen_row_lanes(kg + std::ptrdiff_t(key) * a.k_row_stride, hd, krow);
            }
            if (a.incremental) continue;
            const int key8 = j0 + j8;
            if (visible(key8) && visible(key8 + 7) && hd % 8 == 0) {
                // K transposed 8 keys x 8 dims at a time through registers.
                for (int d = 0; d < hd; d += 8) {
                    __m256 r[8];
                    for (int x = 0; x < 8; ++x) {
                        r[x] = load8(kg + std::ptrdiff_t(key8 + x) * a.k_row_stride + d);
                    }
                    transpose8(r);
                    for (int x = 0; x < 8; ++x) _mm256_storeu_ps(ktb + (d + x) * kKeys + j8, r[x]);
                }
                continue;
            }
            for (int j = j8; j < j8 + 8; ++j) {  // element by element, zeros for hidden keys
                if (!visible(j0 + j)) {
                    for (int d = 0; d < hd; ++d) ktb[d * kKeys + j] = 0.0f;
                    continue;
                }
                const E* krow = kg + std::ptrdiff_t(j0 + j) * a.k_row_stride;
                for (int d = 0; d < hd; ++d) ktb[d * kKeys + j] = widen(krow[d]);
            }
        }
    }
    return {.k = kt, .k_rows = a.incremental, .v = v, .first = first};
}

// A tile: up to kRows query rows of one head that share the first visible key `lo`; row r sees
// keys [lo, hi[r]). Unused rows have hi = lo and a zero query.
struct Tile {
    int n = 0, lo = 0;
    int hi[kRows] = {};
    int rows[kRows] = {};  // the query rows of lanes < n
    int head = 0;
    int hi_min = 0, hi_max = 0;
    alignas(32) float q[kRows][kMaxHd];  // q * scale * log2(e)
    alignas(32) float o[kRows][kMaxHd];  // unnormalised output
    alignas(32) float s[kRows][kKeys];   // scores, then weights, of the current block
    float m[kRows], l[kRows], alpha[kRows];
};

// The tile functions below are always inlined into tile_step: compiled out of line, GCC kept
// their accumulator arrays on the stack, a store per FMA.

// s[r][c..c+16) = sum_d q[r][d] * kt[d][c..c+16) for the 16-key chunks below nk.
[[gnu::always_inline]] inline void tile_scores(Tile* t, const float* kt, int hd, int nk) {
    for (int c = 0; c < nk; c += 16) {
        __m256 acc[kRows][2];
        for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
        const float* kc = kt + c;
        for (int d = 0; d < hd; ++d) {
            const __m256 k0 = _mm256_load_ps(kc + d * kKeys);
            const __m256 k1 = _mm256_load_ps(kc + d * kKeys + 8);
            for (int r = 0; r < kRows; ++r) {
                const __m256 q = _mm256_broadcast_ss(&t->q[r][d]);
                acc[r][0] = _mm256_fmadd_ps(q, k0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(q, k1, acc[r][1]);
            }
        }
        for (int r = 0; r < kRows; ++r) {
            _mm256_store_ps(&t->s[r][c], acc[r][0]);
            _mm256_store_ps(&t->s[r][c + 8], acc[r][1]);
        }
    }
}

// Three query rows against four key rows repacked in lane order: the sums of scores4, 8 lane
// positions at a time (an even or odd half of a 16-dim chunk, or a last chunk of 8, in the
// order scores4 takes them), in 12 accumulators with one key chunk and three query chunks: 7
// loads feed 12 FMAs, where scores4's two rows needed 12 loads for 16. Text prefill attention
// (kernel bench, Zen 1, 1 thread, concurrent pinned A/B against the keys-in-lanes tiles): two
// rows 1.23-1.27x the time, three rows with K repacked by vector loads 1.07-1.15x.
[[gnu::always_inline]] inline void scores4x3(const float* const (&q)[3], const float* const (&k)[4],
                                             int hd, float* const (&s)[3]) {
    __m256 acc[3][4];
    for (auto& row : acc) {
        for (auto& x : row) x = _mm256_setzero_ps();
    }
    for (int c = 0; c < hd; c += 8) {
        const __m256 q0 = _mm256_load_ps(q[0] + c), q1 = _mm256_load_ps(q[1] + c),
                     q2 = _mm256_load_ps(q[2] + c);
        for (int x = 0; x < 4; ++x) {
            const __m256 kc = _mm256_loadu_ps(k[x] + c);
            acc[0][x] = _mm256_fmadd_ps(q0, kc, acc[0][x]);
            acc[1][x] = _mm256_fmadd_ps(q1, kc, acc[1][x]);
            acc[2][x] = _mm256_fmadd_ps(q2, kc, acc[2][x]);
        }
    }
    for (int r = 0; r < 3; ++r) {
        _mm_storeu_ps(s[r], reduce_keys4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
    }
}

// The same scores from K rows repacked in lane order (incremental attention, kb: the block's 64
// rows), three query rows at a time; groups of unused rows are skipped (their scores are
// masked). Scores up to nk rounded up to 8 are written.
[[gnu::always_inline]] inline void tile_scores_rows(Tile* t, const float* kb, int hd, int nk) {
    static_assert(kRows % 3 == 0);
    const int n8 = (nk + 7) / 8 * 8;
    for (int r = 0; r < t->n; r += 3) {
        const float* const q[3] = {t->q[r], t->q[r + 1], t->q[r + 2]};
        for (int j = 0; j < n8; j += 4) {
            const float* const k[4] = {kb + std::ptrdiff_t(j) * hd, kb + std::ptrdiff_t(j + 1) * hd,
                                       kb + std::ptrdiff_t(j + 2) * hd,
                                       kb + std::ptrdiff_t(j + 3) * hd};
            float* const s[3] = {&t->s[r][j], &t->s[r + 1][j], &t->s[r + 2][j]};
            scores4x3(q, k, hd, s);
        }
    }
}

// Online softmax over the block's keys [j0, j0 + nk): scores of keys a row may not see become
// weight 0; m, l and alpha (the rescale of the row's output) are updated. `full`: every row
// sees every key of the block (no masks needed).
[[gnu::always_inline]] inline void tile_softmax(Tile* t, int j0, int nk, bool full) {
    const int n_vec = (nk + 7) / 8;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    alignas(32) float m_old[8] = {}, m_new[8] = {};
    __m256 valid[kRows][kKeys / 8];
    for (int r = 0; r < kRows; ++r) {
        const float* s = t->s[r];
        __m256 mx = _mm256_set1_ps(-INFINITY);
        if (full) {
            for (int v = 0; v < n_vec; ++v) mx = _mm256_max_ps(mx, _mm256_load_ps(s + 8 * v));
        } else {
            // Keys [lo, hi) of this row, relative to the block and clamped to it.
            const __m256i a = _mm256_set1_epi32(std::clamp(t->lo - j0, 0, kKeys));
            const __m256i b = _mm256_set1_epi32(std::clamp(t->hi[r] - j0, 0, nk));
            for (int v = 0; v < n_vec; ++v) {
                const __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(8 * v));
                valid[r][v] = _mm256_castsi256_ps(
                    _mm256_andnot_si256(_mm256_cmpgt_epi32(a, idx), _mm256_cmpgt_epi32(b, idx)));
                mx = _mm256_max_ps(mx, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY),
                                                        _mm256_load_ps(s + 8 * v), valid[r][v]));
            }
        }
        m_old[r] = t->m[r];
        m_new[r] = std::max(t->m[r], hmax(mx));
    }
    // alpha = 2^(m_old - m_new) for all rows at once; 0 where m_old = -inf (nothing seen yet),
    // 1 where m_new = -inf too (still nothing: the output stays 0).
    {
        const __m256 mo = _mm256_load_ps(m_old), mn = _mm256_load_ps(m_new);
        const __m256 none = _mm256_cmp_ps(mn, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
        const __m256 fresh = _mm256_cmp_ps(mo, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
        __m256 alpha = exp2_ps(_mm256_sub_ps(mo, _mm256_blendv_ps(mn, mo, none)));
        alpha = _mm256_andnot_ps(fresh, alpha);
        alpha = _mm256_blendv_ps(alpha, _mm256_set1_ps(1.0f), none);
        alignas(32) float al[8];
        _mm256_store_ps(al, alpha);
        for (int r = 0; r < kRows; ++r) t->alpha[r] = al[r];
    }
    for (int r = 0; r < kRows; ++r) {
        float* s = t->s[r];
        const __m256 m_vec = _mm256_set1_ps(m_new[r]);
        __m256 sum = _mm256_setzero_ps();
        for (int v = 0; v < n_vec; ++v) {
            __m256 p = exp2_ps(_mm256_sub_ps(_mm256_load_ps(s + 8 * v), m_vec));
            if (!full) p = _mm256_and_ps(p, valid[r][v]);  // also zeroes rows with m = -inf
            _mm256_store_ps(s + 8 * v, p);
            sum = _mm256_add_ps(sum, p);
        }
        t->l[r] = std::fma(t->l[r], t->alpha[r], hsum(sum));  // explicit: no contraction choice
        t->m[r] = m_new[r];
    }
}

// o[r][c..) = o[r][c..) * alpha[r] + sum_{j < nk} s[r][j] * v[j][c..) in chunks of W vectors.
template <int W>
[[gnu::always_inline]] inline void tile_accumulate_chunk(Tile* t, const float* v, int hd, int nk,
                                                         int c) {
    __m256 acc[kRows][W];
    for (int r = 0; r < kRows; ++r) {
        const __m256 alpha = _mm256_set1_ps(t->alpha[r]);
        for (int w = 0; w < W; ++w)
            acc[r][w] = _mm256_mul_ps(_mm256_load_ps(&t->o[r][c + 8 * w]), alpha);
    }
    for (int j = 0; j < nk; ++j) {
        const float* vj = v + std::ptrdiff_t(j) * hd + c;
        __m256 vv[W];
        for (int w = 0; w < W; ++w) vv[w] = _mm256_loadu_ps(vj + 8 * w);
        for (int r = 0; r < kRows; ++r) {
            const __m256 p = _mm256_broadcast_ss(&t->s[r][j]);
            for (int w = 0; w < W; ++w) acc[r][w] = _mm256_fmadd_ps(p, vv[w], acc[r][w]);
        }
    }
    for (int r = 0; r < kRows; ++r) {
        for (int w = 0; w < W; ++w) _mm256_store_ps(&t->o[r][c + 8 * w], acc[r][w]);
    }
}

[[gnu::always_inline]] inline void tile_accumulate(Tile* t, const float* v, int hd, int nk) {
    int c = 0;
    for (; c + 16 <= hd; c += 16) tile_accumulate_chunk<2>(t, v, hd, nk, c);
    if (c < hd) tile_accumulate_chunk<1>(t, v, hd, nk, c);
}

// Where a query row keeps dim d: in lane order for incremental attention (lane_position), else
// in order.
inline int q_position(const AttentionArgs& a, int d) {
    return a.incremental ? lane_position(d, a.head_dim) : d;
}

// Prepares a tile whose n, lo, hi, rows and head are set: Q scaled, O and the softmax state
// cleared, unused rows given hi = lo and a zero query.
void tile_begin(const AttentionArgs& a, Tile* t) {
    const int hd = a.head_dim;
    const float qscale = a.scale * kLog2e;
    int hi_max = t->lo;
    for (int r = 0; r < kRows; ++r) {
        if (r < t->n) {
            const float* q =
                a.q + std::ptrdiff_t(t->rows[r]) * a.q_row_stride + t->head * a.q_head_stride;
            for (int d = 0; d < hd; ++d) t->q[r][q_position(a, d)] = q[d] * qscale;
            hi_max = std::max(hi_max, t->hi[r]);
        } else {
            std::fill(t->q[r], t->q[r] + hd, 0.0f);
            t->hi[r] = t->lo;
        }
        std::fill(t->o[r], t->o[r] + hd, 0.0f);
        t->m[r] = -INFINITY;
        t->l[r] = 0.0f;
    }
    // The next tile's query rows (the rows after these, same head) while this batch runs.
    const int next = t->rows[t->n - 1] + 1;
    x86::prefetch_rows(a.q + t->head * a.q_head_stride, a.q_row_stride, next, next + kRows, a.n_q,
                       hd);
    t->hi_max = hi_max;
    t->hi_min = hi_max;
    for (int r = 0; r < kRows; ++r) t->hi_min = std::min(t->hi_min, t->hi[r]);
}

// Key block blk (absolute keys [64 blk, 64 blk + 64)) for a tile that sees some of it.
[[gnu::always_inline]] inline void tile_step(const PackedKV& kv, int hd, int blk, Tile* t) {
    const std::size_t block_floats = std::size_t(kKeys) * hd;
    const int j0 = blk * kKeys;
    const int nk = std::min(kKeys, t->hi_max - j0);
    const std::size_t off = block_floats * std::size_t(blk - kv.first);
    if (kv.k_rows) {
        tile_scores_rows(t, kv.k + off, hd, nk);
    } else {
        tile_scores(t, kv.k + off, hd, nk);
    }
    tile_softmax(t, j0, nk, j0 >= t->lo && j0 + nk <= t->hi_min && nk % 8 == 0);
    tile_accumulate(t, kv.v + off, hd, nk);
}

void tile_end(const AttentionArgs& a, const Tile& t) {
    for (int r = 0; r < t.n; ++r) {
        float* out =
            a.out + std::ptrdiff_t(t.rows[r]) * a.out_row_stride + t.head * a.out_head_stride;
        const float inv = 1.0f / t.l[r];
        for (int d = 0; d < a.head_dim; ++d) out[d] = t.o[r][d] * inv;
    }
}

// Runs n begun tiles over their keys and writes their rows. The keys go by in chunks of about
// 256 KiB of packed K and V, each chunk run by every tile in turn (block by block, its state in
// L1): the chunk stays in L2 for the whole batch, where one tile at a time over all keys
// streamed the task's whole packed K and V (1.8 MB at N = 3520, beyond L2) once per 6 rows.
// Interleaving the tiles at every block instead lost more to reloading their states.
void run_tiles(const AttentionArgs& a, const PackedKV& kv, Tile* tiles, int n) {
    const int chunk = std::max(1, (256 << 10) / (2 * kKeys * a.head_dim * int(sizeof(float))));
    int blk_lo = INT_MAX, hi = 0;
    for (int i = 0; i < n; ++i) {
        blk_lo = std::min(blk_lo, tiles[i].lo / kKeys);
        hi = std::max(hi, tiles[i].hi_max);
    }
    for (int c0 = blk_lo; c0 * kKeys < hi; c0 += chunk) {
        for (int i = 0; i < n; ++i) {
            Tile& t = tiles[i];
            for (int blk = std::max(c0, t.lo / kKeys); blk < c0 + chunk && blk * kKeys < t.hi_max;
                 ++blk) {
                tile_step(kv, a.head_dim, blk, &t);
            }
        }
    }
    for (int i = 0; i < n; ++i) tile_end(a, tiles[i]);
}

void tiled_run_task(const AttentionArgs& a, const AttentionTask& task) {
    const int group = a.n_heads / attention_kv_heads(a);
    int key_lo = a.n_kv, key_hi = 0;
    {
        for (int r = task.row_begin; r < task.row_end; ++r) {
            int lo, hi;
            attention_key_range(a, r, &lo, &hi);
            if (hi > lo) key_lo = std::min(key_lo, lo), key_hi = std::max(key_hi, hi);
        }
    }
    PackedKV kv;
    if (key_hi > key_lo) {
        kv = a.kv_type == KvType::kBF16 ? pack_kv<std::uint16_t>(a, task.kv_head, key_lo, key_hi)
                                        : pack_kv<float>(a, task.kv_head, key_lo, key_hi);
    }
    // The tiles of a batch live in this thread's scratch.
    auto* tiles = static_cast<Tile*>(
        detail::thread_scratch(detail::kScratchAttention, sizeof(Tile) * kTileBatch));
    int n_tiles = 0;
    for (int h = task.kv_head * group; h < (task.kv_head + 1) * group; ++h) {
        for (int r = task.row_begin; r < task.row_end;) {
            int lo, hi;
            attention_key_range(a, r, &lo, &hi);
            if (hi <= lo) {
                float* out = a.out + std::ptrdiff_t(r) * a.out_row_stride + h * a.out_head_stride;
                std::fill(out, out + a.head_dim, 0.0f);
                ++r;
                continue;
            }
            // Gather up to kRows consecutive rows that see keys and share lo.
            Tile& tile = *new (&tiles[n_tiles]) Tile;
            tile.n = 0;
            tile.lo = lo;
            tile.head = h;
            while (true) {
                tile.rows[tile.n] = r;
                tile.hi[tile.n++] = hi;
                ++r;
                if (tile.n == kRows || r >= task.row_end) break;
                int lo2, hi2;
                attention_key_range(a, r, &lo2, &hi2);
                if (hi2 <= lo2 || lo2 != lo) break;
                hi = hi2;
            }
            tile_begin(a, &tile);
            if (++n_tiles == kTileBatch) {
                run_tiles(a, kv, tiles, n_tiles);
                n_tiles = 0;
            }
        }
    }
    if (n_tiles > 0) run_tiles(a, kv, tiles, n_tiles);
}

// Decode: one query row. The P (1 or 2) heads of a pair share every K and V row load; for
// Qwen3-VL's two query heads per kv head K and V are read once per step.
template <int P, class E>
void decode_heads(const AttentionArgs& a, int g, int h0, int row, int lo, int hi) {
    const int hd = a.head_dim;
    const float qscale = a.scale * kLog2e;
    alignas(32) float q[P][kMaxHd];
    alignas(32) float o[P][kMaxHd];
    alignas(32) float s[P][kKeys];
    float m[P], l[P];
    for (int p = 0; p < P; ++p) {
        const float* src = a.q + std::ptrdiff_t(row) * a.q_row_stride + (h0 + p) * a.q_head_stride;
        for (int d = 0; d < hd; ++d) q[p][q_position(a, d)] = src[d] * qscale;
        std::fill(o[p], o[p] + hd, 0.0f);
        m[p] = -INFINITY;
        l[p] = 0.0f;
    }
    const E* kg = static_cast<const E*>(a.k) + g * a.k_head_stride;
    const E* vg = static_cast<const E*>(a.v) + g * a.v_head_stride;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    x86::prefetch_rows(kg, a.k_row_stride, lo, lo + kKeys, hi, hd);
    for (int j0 = lo; j0 < hi; j0 += kKeys) {
        const int nk = std::min(kKeys, hi - j0);
        // Scores four keys at a time with head_dim in lanes, as tile_scores_rows computes
        // them, so decode rows come out bit-identical to prefill rows; each K row chunk is
        // loaded once for all P heads. Keys past nk (up to a multiple of 8) repeat the last
        // key, in bounds; their weights are masked below.
        const E* const kb = kg + std::ptrdiff_t(j0) * a.k_row_stride;
        const auto key_row = [&](int j) {
            return kb + std::ptrdiff_t(std::min(j, nk - 1)) * a.k_row_stride;
        };
        for (int j = 0; j < (nk + 7) / 8 * 8; j += 4) {
            // The next block's K and V rows, into L2 (x86/prefetch_rows.h): without them a
            // step waited on DRAM at 4 GB/s (the hardware prefetchers restart at every switch
            // between the K and V streams). Into L1, and V only for this block, they read
            // 7.4-12.7 GB/s (kernel bench attention/decode*, ctx 1024/4096, 1 thread, Zen 4,
            // three alternated runs); into L2 a block ahead, 11.6-19.3.
            x86::prefetch_rows_l2(vg, a.v_row_stride, j0 + kKeys + j, j0 + kKeys + j + 4, hi, hd);
            x86::prefetch_rows_l2(kg, a.k_row_stride, j0 + kKeys + j, j0 + kKeys + j + 4, hi, hd);
            const E* const k[4] = {key_row(j), key_row(j + 1), key_row(j + 2), key_row(j + 3)};
            float* s_at[P];
            const float* q_at[P];
            for (int p = 0; p < P; ++p) s_at[p] = s[p] + j, q_at[p] = q[p];
            scores4<P>(q_at, k, hd, s_at);
        }
        // Online softmax per head; lanes past nk get weight 0.
        const int n_vec = (nk + 7) / 8;
        float alpha[P];
        for (int p = 0; p < P; ++p) {
            __m256 mx = _mm256_set1_ps(-INFINITY);
            __m256 valid[kKeys / 8];
            for (int v = 0; v < n_vec; ++v) {
                const __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(8 * v));
                valid[v] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(nk), idx));
                mx = _mm256_max_ps(mx, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY),
                                                        _mm256_load_ps(s[p] + 8 * v), valid[v]));
            }
            const float m_new = std::max(m[p], hmax(mx));
            const __m256 m_vec = _mm256_set1_ps(m_new);
            __m256 sum = _mm256_setzero_ps();
            for (int v = 0; v < n_vec; ++v) {
                const __m256 e = _mm256_and_ps(
                    exp2_ps(_mm256_sub_ps(_mm256_load_ps(s[p] + 8 * v), m_vec)), valid[v]);
                _mm256_store_ps(s[p] + 8 * v, e);
                sum = _mm256_add_ps(sum, e);
            }
            alpha[p] = rescale(m[p], m_new);
            l[p] = std::fma(l[p], alpha[p], hsum(sum));  // as in tile_softmax
            m[p] = m_new;
        }
        // o = o * alpha + P V, 32 lane positions at a time (bf16 V rows in lane order: see
        // v_position): each V row chunk is loaded once for all heads.
        const E* v0 = vg + std::ptrdiff_t(j0) * a.v_row_stride;
        int c = 0;
        for (; c + 32 <= hd; c += 32) {
            __m256 acc[P][4];
            for (int p = 0; p < P; ++p) {
                for (int w = 0; w < 4; ++w) {
                    acc[p][w] =
                        _mm256_mul_ps(_mm256_load_ps(o[p] + c + 8 * w), _mm256_set1_ps(alpha[p]));
                }
            }
            for (int jj = 0; jj < nk; ++jj) {
                const E* vr = v0 + std::ptrdiff_t(jj) * a.v_row_stride + c;
                __m256 vv[4];
                if constexpr (std::is_same_v<E, std::uint16_t>) {
                    load16_lanes(vr, 0, &vv[0], &vv[1]);
                    load16_lanes(vr, 16, &vv[2], &vv[3]);
                } else {
                    for (int w = 0; w < 4; ++w) vv[w] = load8(vr + 8 * w);
                }
                for (int p = 0; p < P; ++p) {
                    const __m256 w8 = _mm256_broadcast_ss(&s[p][jj]);
                    for (int w = 0; w < 4; ++w) acc[p][w] = _mm256_fmadd_ps(w8, vv[w], acc[p][w]);
                }
            }
            for (int p = 0; p < P; ++p) {
                for (int w = 0; w < 4; ++w) _mm256_store_ps(o[p] + c + 8 * w, acc[p][w]);
            }
        }
        for (; c < hd; c += 8) {
            __m256 acc[P];
            for (int p = 0; p < P; ++p) {
                acc[p] = _mm256_mul_ps(_mm256_load_ps(o[p] + c), _mm256_set1_ps(alpha[p]));
            }
            for (int jj = 0; jj < nk; ++jj) {
                const __m256 vv = load8_v(v0 + std::ptrdiff_t(jj) * a.v_row_stride, c, hd);
                for (int p = 0; p < P; ++p) {
                    acc[p] = _mm256_fmadd_ps(_mm256_broadcast_ss(&s[p][jj]), vv, acc[p]);
                }
            }
            for (int p = 0; p < P; ++p) _mm256_store_ps(o[p] + c, acc[p]);
        }
    }
    for (int p = 0; p < P; ++p) {
        float* out = a.out + std::ptrdiff_t(row) * a.out_row_stride + (h0 + p) * a.out_head_stride;
        const float inv = 1.0f / l[p];
        for (int d = 0; d < hd; ++d) out[d] = o[p][v_position<E>(d, hd)] * inv;
    }
}

template <class E>
void decode_run_task(const AttentionArgs& a, const AttentionTask& t) {
    const int group = a.n_heads / attention_kv_heads(a);
    for (int r = t.row_begin; r < t.row_end; ++r) {
        int lo, hi;
        attention_key_range(a, r, &lo, &hi);
        int h = t.kv_head * group;
        const int h_end = h + group;
        if (hi <= lo) {
            for (; h < h_end; ++h) {
                float* out = a.out + std::ptrdiff_t(r) * a.out_row_stride + h * a.out_head_stride;
                std::fill(out, out + a.head_dim, 0.0f);
            }
            continue;
        }
        for (; h + 2 <= h_end; h += 2) decode_heads<2, E>(a, t.kv_head, h, r, lo, hi);
        if (h < h_end) decode_heads<1, E>(a, t.kv_head, h, r, lo, hi);
    }
}

}  // namespace

void attention_run_task(const AttentionArgs& a, int task, int num_tasks) {
    // The choice depends on the arguments only, never on the task split.
    if (a.head_dim % 8 != 0 || a.head_dim > kMaxHd) {
        return simd::attention_run_task<xsimd::fma3<xsimd::avx2>>(a, task, num_tasks);
    }
    AttentionTask t;
    if (!attention_task(a, task, num_tasks, &t)) return;
    if (a.n_q == 1 && a.incremental) {
        return a.kv_type == KvType::kBF16 ? decode_run_task<std::uint16_t>(a, t)
                                          : decode_run_task<float>(a, t);
    }
    tiled_run_task(a, t);
}

}  // namespace qvl::kernels::avx2
