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
// The decode path lives in x86/attention_decode_avx2.cpp, what both compute alike in
// x86/attention_avx2_lanes.h.
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
#include "kernels/x86/attention_avx2_lanes.h"
#include "kernels/x86/prefetch_rows.h"
#include "kernels/x86/tier_entries.h"

namespace qvl::kernels::avx2 {
namespace {

constexpr int kRows = 6;       // query rows per tile
constexpr int kTileBatch = 8;  // tiles that share each pass over the packed keys

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
// Rows asked for ahead of the one being repacked (x86/prefetch_rows.h): without these requests,
// waiting for K/V and query rows was most of a vision task's time outside the tiles.
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
}  // namespace

void attention_run_task(const AttentionArgs& a, int task, int num_tasks) {
    // The choice depends on the arguments only, never on the task split.
    if (a.head_dim % 8 != 0 || a.head_dim > kMaxHd) {
        return simd::attention_run_task<xsimd::fma3<xsimd::avx2>>(a, task, num_tasks);
    }
    AttentionTask t;
    if (!attention_task(a, task, num_tasks, &t)) return;
    if (a.n_q == 1 && a.incremental) {
        return decode_attention_task(a, t);
    }
    tiled_run_task(a, t);
}

}  // namespace qvl::kernels::avx2
