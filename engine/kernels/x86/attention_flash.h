// The flash-attention driver shared by the AVX-512 f32 kernel (attention_avx512.cpp) and the
// AVX512_BF16 kernel (attention_avx512bf16.cpp): task loop, query blocks, online softmax and the
// final normalisation. The two products are supplied by a traits type T (below), so each ISA file
// instantiates the same driver with its own tiles.
//
// Up to 32 (head, row) items of one kv-head group share the lanes of two zmm registers. Q is
// packed transposed, Qt[d][item], so both products are register-blocked outer products with the
// broadcast operand taken from K or V:
//   St[key][item]  = sum_d K[key][d] * Qt[d][item]
//   Ot[d][item]   += sum_key V[key][d] * Pt[key][item]
// and the online softmax runs vertically (one lane per item), with no transposes in the loop.
// Scores are pre-scaled by log2(e) so the softmax uses exp2.
//
// Blocks are cut at absolute multiples of the row granule and key blocks start at the row's
// first visible key, so every row is computed the same way whatever the task split
// (results do not depend on the thread count).
//
// Traits T provide (all static):
//   kExpDegree                            5 or 3: the exp2 polynomial (exp2_ps below)
//   struct Operands;                      per-thread buffers the products need
//   prepare_q(hd, qt, slot, ops)          Qt (f32, scaled) of batch slot `slot` was just written
//   begin_task(a, g, key_lo, key_hi, ops) a task of kv head g will read keys [key_lo, key_hi)
//   load_kv(a, g, j0, nb, next, ops)      key block [j0, j0 + nb) of kv head g; `next` rows of
//                                         the following block may be prefetched
//   scores(ops, slot, qt, hd, nb, st)     St[0:nb][0:32]
//   weights(ops, st, j0, nb, sub0, sub1, sum0, sum1)
//                                         the softmax weights Pt = 2^(St - sub) of the block, in
//                                         whatever form accumulate reads (exp_weights below
//                                         writes them over St), and their sums per lane, added
//                                         key by key in increasing order
//   accumulate(ops, pt, j0, nb, hd, al0, al1, ot)
//                                         Ot = Ot * alpha + V^T Pt over the block (Pt rows nb..
//                                         unused; alpha: al0 for lanes 0-15, al1 for 16-31),
//                                         the rescale product rounded before the first FMA
//   try_small(a, g, group, row, n, lo, hi) -> bool: handle a block of n rows some other way
//                                         (e.g. decode), false to use the flash path
//
// This header holds definitions for one translation unit per ISA: everything is in an anonymous
// namespace, so the copies built with different -m flags never meet at link time.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_plan.h"
#include "kernels/scratch.h"
#include "kernels/x86/prefetch_rows.h"
#include "kernels/x86/static_count.h"

namespace qvl::kernels::x86 {
namespace {

constexpr int kItems = 32;  // (head, row) lanes of a flash block
// Keys per online-softmax step (the decode paths reproduce these steps); 32 was slower, 128 no
// faster (bench/README.md, kernel design measurements).
constexpr int kKeyBlock = 64;
constexpr int kMaxHeadDim = 128;
constexpr int kBatch = 8;  // flash blocks sharing each packed key block
constexpr float kLog2e = 1.4426950408889634f;

// 2^x for x <= 0 (scores minus their running max): x = n + f with |f| <= 1/2, 2^f by a
// near-minimax polynomial in relative error with constant term exactly 1 (so 2^0 == 1 and a key
// block that leaves the max unchanged leaves the state bit-identical), 2^n applied exactly by
// vscalefps; -inf (anything below -125) gives 0. Degree 5: relative error 1.6e-7 evaluated in
// f32 (about 2 ulp; degree 6 reached 8e-8 for one more FMA per 16 scores, while the f32 score
// products already err by ~1e-6); degree 3: ~1e-4, ample where the weights are then rounded to
// bf16 (~4e-3) and two FMAs cheaper again.
// On Zen 4 the FMAs and the compare below each take about a cycle of the pipe that runs the
// products' vdpbf16ps, vreduceps under half of one, while the subtractions and vscalefps issue
// beside it for nothing. So the FMAs are most of what the softmax costs the bf16 kernel;
// computing the exponentials between product tiles, or a table of 2^(j/32) read with vpermt2ps,
// gained nothing (bench/README.md, kernel design measurements).
template <int Degree>
inline __m512 exp2_ps(__m512 x) {
    static_assert(Degree == 5 || Degree == 3);
    // Below -125 (and for -inf or NaN) the result is exactly 0, by the zero-masking of the last
    // step, so no result that reaches the caller underflows: an underflowing result takes a
    // microcode assist of a hundred cycles or more on Intel cores, and the masked (-inf) scores
    // of every causal diagonal block produced one per lane when the scaling was unmasked (a
    // quarter of the 212-row text prefill's time went there). The lanes the mask drops need no
    // clamp: -inf gives a NaN or infinite n (no underflow), and a finite x below -125 only a
    // dropped lane's product. No max clamp here (same results for every input): it was
    // measurably faster without.
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-125.0f), _CMP_GE_OQ);
    // f = x - round(x) in one vreduceps (vrndscaleps is two uops), then n = x - f: both exact,
    // the same values as rounding first.
    const __m512 f = _mm512_reduce_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 n = _mm512_sub_ps(x, f);
    __m512 p;
    if constexpr (Degree == 5) {  // minimax (Lawson) fit of (2^f - 1) / f on [-1/2, 1/2]
        p = _mm512_set1_ps(1.3264728477224708e-03f);
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.671512991189957e-03f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550733581185341e-02f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022242426872253e-01f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931470036506653e-01f));
    } else {
        p = _mm512_set1_ps(5.500892549753189e-02f);
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.422109991312027e-01f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.932829022407532e-01f));
    }
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(keep, p, n);
}

// The softmax weights over the scores, in place: St[j] = 2^(St[j] - sub) for j < nb, lanes 0-15
// less sub0 and 16-31 less sub1, and their sums (key by key, in increasing order).
template <int Degree>
inline void exp_weights(float* st, int nb, __m512 sub0, __m512 sub1, __m512* sum0, __m512* sum1) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    for (int j = 0; j < nb; ++j) {
        float* sj = st + j * kItems;
        const __m512 p0 = exp2_ps<Degree>(_mm512_sub_ps(_mm512_load_ps(sj), sub0));
        const __m512 p1 = exp2_ps<Degree>(_mm512_sub_ps(_mm512_load_ps(sj + 16), sub1));
        _mm512_store_ps(sj, p0);
        _mm512_store_ps(sj + 16, p1);
        s0 = _mm512_add_ps(s0, p0);
        s1 = _mm512_add_ps(s1, p1);
    }
    *sum0 = s0;
    *sum1 = s1;
}

// Whether some lane's rescale factor differs from 1. Once the running maxima settle most key
// blocks rescale nothing, and the tiles then skip the products (x * 1 == x: same result).
inline bool needs_rescale(__m512 al0, __m512 al1) {
    const __m512 one = _mm512_set1_ps(1.0f);
    return (_mm512_cmpeq_ps_mask(al0, one) & _mm512_cmpeq_ps_mask(al1, one)) != 0xffff;
}

// In-register transpose of a 16 x 16 block of 32-bit elements: r[i] holds row i on entry and
// column i on return (for the decode paths, which put keys in lanes as the flash tiles do).
inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    // u[4 g + c], 128-bit lane L: rows 4g..4g+3 of column 4L + c.
    __m512 u[16];
    for (int g = 0; g < 16; g += 4) {
        u[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
        u[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
        u[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        u[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
        const __m512 a0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
        const __m512 a1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
        const __m512 b0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
        const __m512 b1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
        r[c] = _mm512_shuffle_f32x4(a0, b0, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(a1, b1, 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(a0, b0, 0xDD);
        r[12 + c] = _mm512_shuffle_f32x4(a1, b1, 0xDD);
    }
}

// 16 K/V elements as f32: a load for f32, a 16-bit shift for bf16 (exact).
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const std::uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Keys per score tile: the tiles are templates on their key count, run over a key block with
// for_static_tiles<kKeyTile> (x86/static_count.h), the last tile holding the n % 8 rest.
constexpr int kKeyTile = 8;

// A flash block: rows [row0, row0 + n_rows) of one kv head's group, row r seeing keys
// [lo, hi[r - row0]); lane (hh, rr) = hh * (kItems / group) + rr. Its running max m and sum l
// per lane live here between key blocks.
struct FlashBlock {
    int row0 = 0, n_rows = 0;
    int hi_min = 0, hi_max = 0;
    alignas(64) int lane_hi[kItems];
    __m512 m0, m1, l0, l1;
};

template <class T>
struct FlashScratch {
    alignas(64) float qt[kBatch][kMaxHeadDim * kItems];
    alignas(64) float ot[kBatch][kMaxHeadDim * kItems];
    alignas(64) float st[kKeyBlock * kItems];
    typename T::Operands ops;
};

template <class T>
void flash_init(const AttentionArgs& a, int g, int group, int row0, int n_rows, const int* hi,
                int slot, FlashBlock* b, FlashScratch<T>* s) {
    float* qt = s->qt[slot];
    const int hd = a.head_dim;
    const int rows_per_head = kItems / group;
    b->row0 = row0;
    b->n_rows = n_rows;
    b->hi_max = hi[0];
    b->hi_min = hi[0];
    for (int rr = 1; rr < n_rows; ++rr) {
        b->hi_max = std::max(b->hi_max, hi[rr]);
        b->hi_min = std::min(b->hi_min, hi[rr]);
    }
    // Q scaled into the exp2 domain; empty lanes are zero and never masked.
    std::memset(s->ot[slot], 0, sizeof(float) * hd * kItems);
    const float qscale = a.scale * kLog2e;
    const float* q0 = a.q + row0 * a.q_row_stride + g * group * a.q_head_stride;
    const float* lane_q[kItems];  // the lane's query row, or null for an empty lane
    for (int lane = 0; lane < kItems; ++lane) {
        const int hh = lane / rows_per_head, rr = lane % rows_per_head;
        b->lane_hi[lane] = b->hi_max;
        lane_q[lane] = nullptr;
        if (hh >= group || rr >= n_rows) continue;
        b->lane_hi[lane] = hi[rr];
        lane_q[lane] = q0 + rr * a.q_row_stride + hh * a.q_head_stride;
    }
    // Qt[d][lanes] by 16 x 16 transposes of the lanes' rows: gathers (16 lines each, pages
    // apart in the fused vision qkv) cost several times more.
    const __m512 sc = _mm512_set1_ps(qscale);
    for (int half = 0; half < kItems; half += 16) {
        for (int d0 = 0; d0 < hd; d0 += 16) {
            __m512 r[16];
            for (int i = 0; i < 16; ++i) {
                const float* q = lane_q[half + i];
                r[i] =
                    q != nullptr ? _mm512_mul_ps(_mm512_loadu_ps(q + d0), sc) : _mm512_setzero_ps();
            }
            transpose16(r);
            for (int i = 0; i < 16; ++i) _mm512_store_ps(qt + (d0 + i) * kItems + half, r[i]);
        }
    }
    T::prepare_q(hd, qt, slot, &s->ops);
    b->m0 = b->m1 = _mm512_set1_ps(-INFINITY);
    b->l0 = b->l1 = _mm512_setzero_ps();
}

// One key block [j0, j0 + nb) (nb clipped to the block's hi_max) for the flash block in `slot`.
template <class T>
void flash_step(int hd, int j0, int nb, int slot, FlashBlock* b, FlashScratch<T>* s) {
    float* st = s->st;
    float* ot = s->ot[slot];
    T::scores(s->ops, slot, s->qt[slot], hd, nb, st);
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    if (j0 + nb > b->hi_min) {  // some lane stops inside this block: mask its later keys
        const __m512i hi0 = _mm512_load_si512(b->lane_hi);
        const __m512i hi1 = _mm512_load_si512(b->lane_hi + 16);
        for (int j = 0; j < nb; ++j) {
            const __m512i jv = _mm512_set1_epi32(j0 + j);
            float* sj = st + j * kItems;
            _mm512_store_ps(sj, _mm512_mask_mov_ps(neg_inf, _mm512_cmplt_epi32_mask(jv, hi0),
                                                   _mm512_load_ps(sj)));
            _mm512_store_ps(sj + 16, _mm512_mask_mov_ps(neg_inf, _mm512_cmplt_epi32_mask(jv, hi1),
                                                        _mm512_load_ps(sj + 16)));
        }
    }
    // Four independent max chains per half: one chain would wait out the max latency at every
    // key. (The max is exact, so the grouping does not change the result.)
    __m512 mx[2][4];
    for (int c = 0; c < 4; ++c) mx[0][c] = b->m0, mx[1][c] = b->m1;
    int jm = 0;
    for (; jm + 4 <= nb; jm += 4) {
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            mx[0][c] = _mm512_max_ps(mx[0][c], _mm512_load_ps(st + (jm + c) * kItems));
            mx[1][c] = _mm512_max_ps(mx[1][c], _mm512_load_ps(st + (jm + c) * kItems + 16));
        }
    }
    for (; jm < nb; ++jm) {
        mx[0][0] = _mm512_max_ps(mx[0][0], _mm512_load_ps(st + jm * kItems));
        mx[1][0] = _mm512_max_ps(mx[1][0], _mm512_load_ps(st + jm * kItems + 16));
    }
    const __m512 mx0 =
        _mm512_max_ps(_mm512_max_ps(mx[0][0], mx[0][1]), _mm512_max_ps(mx[0][2], mx[0][3]));
    const __m512 mx1 =
        _mm512_max_ps(_mm512_max_ps(mx[1][0], mx[1][1]), _mm512_max_ps(mx[1][2], mx[1][3]));
    // A lane that has seen only masked keys keeps max -inf; subtract 0 there instead.
    const __m512 sub0 =
        _mm512_mask_mov_ps(mx0, _mm512_cmpeq_ps_mask(mx0, neg_inf), _mm512_setzero_ps());
    const __m512 sub1 =
        _mm512_mask_mov_ps(mx1, _mm512_cmpeq_ps_mask(mx1, neg_inf), _mm512_setzero_ps());
    const __m512 alpha0 = exp2_ps<T::kExpDegree>(_mm512_sub_ps(b->m0, sub0));
    const __m512 alpha1 = exp2_ps<T::kExpDegree>(_mm512_sub_ps(b->m1, sub1));
    b->m0 = mx0;
    b->m1 = mx1;
    __m512 sum0, sum1;
    T::weights(s->ops, st, j0, nb, sub0, sub1, &sum0, &sum1);
    b->l0 = _mm512_fmadd_ps(b->l0, alpha0, sum0);
    b->l1 = _mm512_fmadd_ps(b->l1, alpha1, sum1);
    // The rescale of Ot happens inside the product's tiles, as they load their accumulators: a
    // separate pass would load and store all of Ot once more per key block.
    T::accumulate(s->ops, st, j0, nb, hd, alpha0, alpha1, ot);
}

inline void flash_finish(const AttentionArgs& a, int g, int group, const FlashBlock& b,
                         const float* ot) {
    const int rows_per_head = kItems / group;
    alignas(64) float inv_l[kItems];
    _mm512_store_ps(inv_l, _mm512_div_ps(_mm512_set1_ps(1.0f), b.l0));
    _mm512_store_ps(inv_l + 16, _mm512_div_ps(_mm512_set1_ps(1.0f), b.l1));
    float* lane_out[kItems];  // the lane's output row, or null for an empty lane
    for (int lane = 0; lane < kItems; ++lane) {
        const int hh = lane / rows_per_head, rr = lane % rows_per_head;
        lane_out[lane] = hh < group && rr < b.n_rows ? a.out + (b.row0 + rr) * a.out_row_stride +
                                                           (g * group + hh) * a.out_head_stride
                                                     : nullptr;
    }
    // Columns of Ot by 16 x 16 transposes (cheaper than a gather per 16 head dims), staged as
    // rows in L1 and then written out row by row. Storing each transposed chunk straight to its
    // 16 output rows (pages apart, all at one page offset) was slower.
    alignas(64) float rows[kItems][kMaxHeadDim];
    for (int half = 0; half < kItems; half += 16) {
        for (int d0 = 0; d0 < a.head_dim; d0 += 16) {
            __m512 r[16];
            for (int i = 0; i < 16; ++i) r[i] = _mm512_load_ps(ot + (d0 + i) * kItems + half);
            transpose16(r);
            for (int i = 0; i < 16; ++i) _mm512_store_ps(rows[half + i] + d0, r[i]);
        }
    }
    for (int lane = 0; lane < kItems; ++lane) {
        float* out = lane_out[lane];
        if (out == nullptr) continue;
        const __m512 inv = _mm512_set1_ps(inv_l[lane]);
        for (int d = 0; d < a.head_dim; d += 16) {
            _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_load_ps(rows[lane] + d), inv));
        }
    }
}

// Runs n_blocks initialised flash blocks of kv head g that all start at key lo.
template <class T>
void flash_batch(const AttentionArgs& a, int g, int group, int lo, FlashBlock* blocks, int n_blocks,
                 FlashScratch<T>* s) {
    const int hd = a.head_dim;
    int hi_max = lo;
    for (int i = 0; i < n_blocks; ++i) hi_max = std::max(hi_max, blocks[i].hi_max);
    for (int j0 = lo; j0 < hi_max; j0 += kKeyBlock) {
        const int nb = std::min(kKeyBlock, hi_max - j0);
        const int next = std::min(kKeyBlock, hi_max - j0 - nb);
        T::load_kv(a, g, j0, nb, next, &s->ops);
        for (int i = 0; i < n_blocks; ++i) {
            FlashBlock& b = blocks[i];
            if (j0 >= b.hi_max) continue;
            flash_step<T>(hd, j0, std::min(nb, b.hi_max - j0), i, &b, s);
        }
    }
    for (int i = 0; i < n_blocks; ++i) flash_finish(a, g, group, blocks[i], s->ot[i]);
}

inline void zero_row(const AttentionArgs& a, int g, int group, int row) {
    for (int hh = 0; hh < group; ++hh) {
        float* out = a.out + row * a.out_row_stride + (g * group + hh) * a.out_head_stride;
        std::fill(out, out + a.head_dim, 0.0f);
    }
}

// Whether the flash driver handles this problem (else the caller falls back).
inline bool flash_supported(const AttentionArgs& a) {
    const int group = a.n_heads / std::max(1, attention_kv_heads(a));
    return a.head_dim % 16 == 0 && a.head_dim <= kMaxHeadDim && group >= 1 && group <= kItems;
}

// One task (kernels/attention_plan.h) of a problem flash_supported() accepts.
template <class T>
void flash_run_task(const AttentionArgs& a, int task, int num_tasks) {
    const int group = a.n_heads / std::max(1, attention_kv_heads(a));
    AttentionTask t;
    if (!attention_task(a, task, num_tasks, &t)) return;
    const int granule = attention_row_granule(a);
    // One scratch per thread (kernels/scratch.h), reached through a reference that is passed
    // down: the tiles never touch thread-local storage themselves (in -fPIC code each such
    // access is a __tls_get_addr call, which made GCC spill every accumulator around it).
    FlashScratch<T>& scratch = *new (
        detail::thread_scratch(detail::kScratchAttention, sizeof(FlashScratch<T>))) FlashScratch<T>;
    int key_lo = a.n_kv, key_hi = 0;
    for (int r = t.row_begin; r < t.row_end; ++r) {
        int lo, h;
        attention_key_range(a, r, &lo, &h);
        if (h > lo) key_lo = std::min(key_lo, lo), key_hi = std::max(key_hi, h);
    }
    // Only once a flash block needs it: a task of decode rows (try_small) never does.
    bool begun = false;
    FlashBlock blocks[kBatch];
    int n_blocks = 0, batch_lo = 0;
    int hi[kItems];
    for (int r = t.row_begin; r < t.row_end;) {
        int lo, h;
        attention_key_range(a, r, &lo, &h);
        if (h <= lo) {
            zero_row(a, t.kv_head, group, r);
            ++r;
            continue;
        }
        // Extend the block while rows share lo, stay inside the granule and see some key.
        const int limit = std::min(t.row_end, (r / granule + 1) * granule);
        int n = 0;
        hi[n++] = h;
        while (r + n < limit) {
            int lo2, h2;
            attention_key_range(a, r + n, &lo2, &h2);
            if (lo2 != lo || h2 <= lo2) break;
            hi[n++] = h2;
        }
        if (!T::try_small(a, t.kv_head, group, r, n, lo, hi)) {
            if (n_blocks == kBatch || (n_blocks > 0 && lo != batch_lo)) {
                flash_batch<T>(a, t.kv_head, group, batch_lo, blocks, n_blocks, &scratch);
                n_blocks = 0;
            }
            if (!begun) T::begin_task(a, t.kv_head, key_lo, key_hi, &scratch.ops), begun = true;
            batch_lo = lo;
            flash_init<T>(a, t.kv_head, group, r, n, hi, n_blocks, &blocks[n_blocks], &scratch);
            ++n_blocks;
        }
        r += n;
    }
    if (n_blocks > 0) flash_batch<T>(a, t.kv_head, group, batch_lo, blocks, n_blocks, &scratch);
}

}  // namespace
}  // namespace qvl::kernels::x86
