// AVX-512 f32 attention (kernels/attention.h). Two paths, chosen per block of query rows:
//
// Flash path (vision, prefill): up to 32 (head, row) items of one kv-head group share the lanes
// of two zmm registers. Q is packed transposed, Qt[d][item], so both products are the same
// register-blocked outer product, broadcast operand straight from K or V memory:
//   St[key][item]  = sum_d K[key][d] * Qt[d][item]         (8 keys x 32 items per tile)
//   Ot[d][item]   += sum_key V[key][d] * Pt[key][item]     (8 dims x 32 items per tile)
// and the online softmax runs vertically (one lane per item), with no transposes in the loop.
// Scores are pre-scaled by log2(e) so the softmax uses exp2.
//
// Decode path (a few items, long context): per key, K and V rows are streamed once for the
// one or two query heads sharing them; dot products reduce horizontally.
//
// Blocks are cut at absolute multiples of the row granule and at segment starts, and key
// blocks start at the segment start, so every row is computed the same way whatever the task
// split (results do not depend on the thread count).
// GCC 12 reports the undefined lanes inside _mm512_reduce_*_ps and friends as (maybe-)
// uninitialized; a false positive, silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/attention_plan.h"
#include "kernels/simd/attention_simd.h"
#include "kernels/x86/ops_table.h"

namespace qvl::kernels::avx512 {

namespace {

constexpr int kItems = 32;         // (head, row) lanes of a flash block
constexpr int kKeyBlock = 64;      // keys per online-softmax step (flash)
constexpr int kDecodeChunk = 256;  // keys per online-softmax step (decode)
constexpr int kMaxHeadDim = 128;
constexpr float kLog2e = 1.4426950408889634f;

// 2^x for x <= 0 (scores minus their running max), relative error ~1e-7: x = n + f with
// |f| <= 1/2, 2^f by a degree-6 near-minimax polynomial (constant term exactly 1, so
// 2^0 == 1 and a key block that leaves the max unchanged leaves the state bit-identical),
// 2^n applied exactly by vscalefps. -inf (anything below -160) gives 0.
inline __m512 exp2_ps(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-160.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(1.5345591236837208e-04f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3399904128164053e-03f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618490003049374e-03f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550329014658928e-02f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022646248340607e-01f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931471824645996e-01f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

inline __mmask16 tail_mask(int n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }

// ---------------------------------------------------------------------------------------------
// Flash path

// St[r][0:32] = sum_d k[r * k_stride + d] * Qt[d][0:32] for r < MR.
template <int MR>
inline void qk_tile(const float* k, std::ptrdiff_t k_stride, const float* qt, int head_dim,
                    float* st) {
    __m512 acc0[MR], acc1[MR];
    for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
    for (int d = 0; d < head_dim; ++d) {
        const __m512 b0 = _mm512_load_ps(qt + d * kItems);
        const __m512 b1 = _mm512_load_ps(qt + d * kItems + 16);
        for (int r = 0; r < MR; ++r) {
            const __m512 av = _mm512_set1_ps(k[r * k_stride + d]);
            acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
            acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
        }
    }
    for (int r = 0; r < MR; ++r) {
        _mm512_store_ps(st + r * kItems, acc0[r]);
        _mm512_store_ps(st + r * kItems + 16, acc1[r]);
    }
}

// Ot[r][0:32] += sum_j v[j * v_stride + r] * Pt[j][0:32] for r < 8 (8 head dims).
inline void pv_tile(const float* v, std::ptrdiff_t v_stride, const float* pt, int n_keys,
                    float* ot) {
    __m512 acc0[8], acc1[8];
    for (int r = 0; r < 8; ++r) {
        acc0[r] = _mm512_load_ps(ot + r * kItems);
        acc1[r] = _mm512_load_ps(ot + r * kItems + 16);
    }
    for (int j = 0; j < n_keys; ++j) {
        const __m512 b0 = _mm512_load_ps(pt + j * kItems);
        const __m512 b1 = _mm512_load_ps(pt + j * kItems + 16);
        const float* vj = v + j * v_stride;
        for (int r = 0; r < 8; ++r) {
            const __m512 av = _mm512_set1_ps(vj[r]);
            acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
            acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
        }
    }
    for (int r = 0; r < 8; ++r) {
        _mm512_store_ps(ot + r * kItems, acc0[r]);
        _mm512_store_ps(ot + r * kItems + 16, acc1[r]);
    }
}

void qk_rows(const float* k, std::ptrdiff_t k_stride, const float* qt, int head_dim, int n,
             float* st) {
    int j = 0;
    for (; j + 8 <= n; j += 8)
        qk_tile<8>(k + j * k_stride, k_stride, qt, head_dim, st + j * kItems);
    const float* kj = k + j * k_stride;
    float* sj = st + j * kItems;
    switch (n - j) {
        case 7:
            return qk_tile<7>(kj, k_stride, qt, head_dim, sj);
        case 6:
            return qk_tile<6>(kj, k_stride, qt, head_dim, sj);
        case 5:
            return qk_tile<5>(kj, k_stride, qt, head_dim, sj);
        case 4:
            return qk_tile<4>(kj, k_stride, qt, head_dim, sj);
        case 3:
            return qk_tile<3>(kj, k_stride, qt, head_dim, sj);
        case 2:
            return qk_tile<2>(kj, k_stride, qt, head_dim, sj);
        case 1:
            return qk_tile<1>(kj, k_stride, qt, head_dim, sj);
        default:
            return;
    }
}

// Copies rows x cols floats (cols % 16 == 0) from rows `stride` apart into a dense buffer.
// Rows 12 KiB apart sit in different pages, which hardware prefetchers do not cross, so the
// same rows of the next key block (`next` of them) are prefetched into L2 along the way.
void copy_rows(const float* src, std::ptrdiff_t stride, int rows, int cols, int next, float* dst) {
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; c += 16) {
            if (r < next) {
                _mm_prefetch(reinterpret_cast<const char*>(src + (kKeyBlock + r) * stride + c),
                             _MM_HINT_T1);
            }
            _mm512_store_ps(dst + r * cols + c, _mm512_loadu_ps(src + r * stride + c));
        }
    }
}

// A flash block: rows [row0, row0 + n_rows) of one kv head's group, row r seeing keys
// [lo, hi[r - row0]); lane (hh, rr) = hh * (kItems / group) + rr. Its running max m and sum l
// per lane live here between key blocks.
struct FlashBlock {
    int row0 = 0, n_rows = 0;
    int hi_min = 0, hi_max = 0;
    alignas(64) int lane_hi[kItems];
    __m512 m0, m1, l0, l1;
};

// Blocks of one batch share lo and each key block is packed once for all of them.
constexpr int kBatch = 8;

struct FlashScratch {
    alignas(64) float qt[kBatch][kMaxHeadDim * kItems];
    alignas(64) float ot[kBatch][kMaxHeadDim * kItems];
    alignas(64) float st[kKeyBlock * kItems];
    alignas(64) float kpack[kKeyBlock * kMaxHeadDim];
    alignas(64) float vpack[kKeyBlock * kMaxHeadDim];
};

void flash_init(const AttentionArgs& a, int g, int group, int row0, int n_rows, const int* hi,
                FlashBlock* b, float* qt, float* ot) {
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
    std::memset(ot, 0, sizeof(float) * hd * kItems);
    const float qscale = a.scale * kLog2e;
    const float* q0 = a.q + row0 * a.q_row_stride + g * group * a.q_head_stride;
    alignas(64) std::int32_t offset[kItems];
    std::uint32_t valid = 0;
    bool fits = true;  // gather offsets are int32
    for (int lane = 0; lane < kItems; ++lane) {
        const int hh = lane / rows_per_head, rr = lane % rows_per_head;
        b->lane_hi[lane] = b->hi_max;
        offset[lane] = 0;
        if (hh >= group || rr >= n_rows) continue;
        b->lane_hi[lane] = hi[rr];
        valid |= 1u << lane;
        const std::ptrdiff_t off = rr * a.q_row_stride + hh * a.q_head_stride;
        fits = fits && off >= 0 && off + hd <= INT32_MAX;
        offset[lane] = std::int32_t(off);
    }
    if (fits) {  // Qt[d][lanes] by gathers: one instruction per 16 lanes
        const __m512i off0 = _mm512_load_si512(offset), off1 = _mm512_load_si512(offset + 16);
        const __mmask16 v0 = __mmask16(valid), v1 = __mmask16(valid >> 16);
        const __m512 sc = _mm512_set1_ps(qscale);
        for (int d = 0; d < hd; ++d) {
            const __m512 g0 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), v0, off0, q0 + d, 4);
            const __m512 g1 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), v1, off1, q0 + d, 4);
            _mm512_store_ps(qt + d * kItems, _mm512_mul_ps(g0, sc));
            _mm512_store_ps(qt + d * kItems + 16, _mm512_mul_ps(g1, sc));
        }
    } else {
        std::memset(qt, 0, sizeof(float) * hd * kItems);
        for (int lane = 0; lane < kItems; ++lane) {
            if ((valid >> lane & 1u) == 0) continue;
            const int hh = lane / rows_per_head, rr = lane % rows_per_head;
            const float* q = q0 + rr * a.q_row_stride + hh * a.q_head_stride;
            for (int d = 0; d < hd; ++d) qt[d * kItems + lane] = q[d] * qscale;
        }
    }
    b->m0 = b->m1 = _mm512_set1_ps(-INFINITY);
    b->l0 = b->l1 = _mm512_setzero_ps();
}

// One key block [j0, j0 + nb) (nb clipped to the block's hi_max) for one flash block.
void flash_step(int hd, int j0, int nb, const float* kb, std::ptrdiff_t k_stride, const float* vb,
                std::ptrdiff_t v_stride, FlashBlock* b, const float* qt, float* ot, float* st) {
    qk_rows(kb, k_stride, qt, hd, nb, st);
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    if (j0 + nb > b->hi_min) {  // some lane stops inside this block: mask its later keys
        const __m512i hi0 = _mm512_load_si512(b->lane_hi);
        const __m512i hi1 = _mm512_load_si512(b->lane_hi + 16);
        for (int j = 0; j < nb; ++j) {
            const __m512i jv = _mm512_set1_epi32(j0 + j);
            float* s = st + j * kItems;
            _mm512_store_ps(s, _mm512_mask_mov_ps(neg_inf, _mm512_cmplt_epi32_mask(jv, hi0),
                                                  _mm512_load_ps(s)));
            _mm512_store_ps(s + 16, _mm512_mask_mov_ps(neg_inf, _mm512_cmplt_epi32_mask(jv, hi1),
                                                       _mm512_load_ps(s + 16)));
        }
    }
    __m512 mx0 = b->m0, mx1 = b->m1;
    for (int j = 0; j < nb; ++j) {
        mx0 = _mm512_max_ps(mx0, _mm512_load_ps(st + j * kItems));
        mx1 = _mm512_max_ps(mx1, _mm512_load_ps(st + j * kItems + 16));
    }
    // A lane that has seen only masked keys keeps max -inf; subtract 0 there instead.
    const __m512 sub0 =
        _mm512_mask_mov_ps(mx0, _mm512_cmpeq_ps_mask(mx0, neg_inf), _mm512_setzero_ps());
    const __m512 sub1 =
        _mm512_mask_mov_ps(mx1, _mm512_cmpeq_ps_mask(mx1, neg_inf), _mm512_setzero_ps());
    const __m512 alpha0 = exp2_ps(_mm512_sub_ps(b->m0, sub0));
    const __m512 alpha1 = exp2_ps(_mm512_sub_ps(b->m1, sub1));
    b->m0 = mx0;
    b->m1 = mx1;
    __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
    for (int j = 0; j < nb; ++j) {
        float* s = st + j * kItems;
        const __m512 p0 = exp2_ps(_mm512_sub_ps(_mm512_load_ps(s), sub0));
        const __m512 p1 = exp2_ps(_mm512_sub_ps(_mm512_load_ps(s + 16), sub1));
        _mm512_store_ps(s, p0);
        _mm512_store_ps(s + 16, p1);
        sum0 = _mm512_add_ps(sum0, p0);
        sum1 = _mm512_add_ps(sum1, p1);
    }
    b->l0 = _mm512_fmadd_ps(b->l0, alpha0, sum0);
    b->l1 = _mm512_fmadd_ps(b->l1, alpha1, sum1);
    const __mmask16 same = _mm512_cmpeq_ps_mask(alpha0, _mm512_set1_ps(1.0f)) &
                           _mm512_cmpeq_ps_mask(alpha1, _mm512_set1_ps(1.0f));
    if (same != 0xffff) {
        for (int d = 0; d < hd; ++d) {
            float* o = ot + d * kItems;
            _mm512_store_ps(o, _mm512_mul_ps(_mm512_load_ps(o), alpha0));
            _mm512_store_ps(o + 16, _mm512_mul_ps(_mm512_load_ps(o + 16), alpha1));
        }
    }
    for (int d0 = 0; d0 < hd; d0 += 8) pv_tile(vb + d0, v_stride, st, nb, ot + d0 * kItems);
}

void flash_finish(const AttentionArgs& a, int g, int group, const FlashBlock& b, const float* ot) {
    const int rows_per_head = kItems / group;
    alignas(64) float inv_l[kItems];
    _mm512_store_ps(inv_l, _mm512_div_ps(_mm512_set1_ps(1.0f), b.l0));
    _mm512_store_ps(inv_l + 16, _mm512_div_ps(_mm512_set1_ps(1.0f), b.l1));
    for (int hh = 0; hh < group; ++hh) {
        for (int rr = 0; rr < b.n_rows; ++rr) {
            const int lane = hh * rows_per_head + rr;
            float* out =
                a.out + (b.row0 + rr) * a.out_row_stride + (g * group + hh) * a.out_head_stride;
            // Column `lane` of Ot, 16 head dims per gather.
            const __m512i idx = _mm512_add_epi32(
                _mm512_mullo_epi32(
                    _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                    _mm512_set1_epi32(kItems)),
                _mm512_set1_epi32(lane));
            const __m512 inv = _mm512_set1_ps(inv_l[lane]);
            for (int d = 0; d < a.head_dim; d += 16) {
                const __m512 o = _mm512_i32gather_ps(idx, ot + d * kItems, 4);
                _mm512_storeu_ps(out + d, _mm512_mul_ps(o, inv));
            }
        }
    }
}

// Runs n_blocks initialised flash blocks of kv head g that all start at key lo.
void flash_batch(const AttentionArgs& a, int g, int group, int lo, FlashBlock* blocks, int n_blocks,
                 FlashScratch* s) {
    const int hd = a.head_dim;
    int hi_max = lo;
    for (int i = 0; i < n_blocks; ++i) hi_max = std::max(hi_max, blocks[i].hi_max);
    const float* kg = a.k + g * a.k_head_stride;
    const float* vg = a.v + g * a.v_head_stride;
    // K and V rows far apart (the vision qkv rows are 12 KiB) alias in L1 when a tile walks 8
    // or 64 of them; such key blocks are first copied to dense [key][head_dim] buffers.
    const bool pack_k = a.k_row_stride != hd, pack_v = a.v_row_stride != hd;
    for (int j0 = lo; j0 < hi_max; j0 += kKeyBlock) {
        const int nb = std::min(kKeyBlock, hi_max - j0);
        const float* kb = kg + j0 * a.k_row_stride;
        const float* vb = vg + j0 * a.v_row_stride;
        std::ptrdiff_t k_stride = a.k_row_stride, v_stride = a.v_row_stride;
        const int next = std::min(kKeyBlock, hi_max - j0 - nb);
        if (pack_k) {
            copy_rows(kb, k_stride, nb, hd, next, s->kpack);
            kb = s->kpack;
            k_stride = hd;
        }
        if (pack_v) {
            copy_rows(vb, v_stride, nb, hd, next, s->vpack);
            vb = s->vpack;
            v_stride = hd;
        }
        for (int i = 0; i < n_blocks; ++i) {
            FlashBlock& b = blocks[i];
            if (j0 >= b.hi_max) continue;
            flash_step(hd, j0, std::min(nb, b.hi_max - j0), kb, k_stride, vb, v_stride, &b,
                       s->qt[i], s->ot[i], s->st);
        }
    }
    for (int i = 0; i < n_blocks; ++i) flash_finish(a, g, group, blocks[i], s->ot[i]);
}

// ---------------------------------------------------------------------------------------------
// Decode path: one query row, NH (1 or 2) heads of the group, keys [lo, hi).

template <int NV, int NH>
void decode_row(const AttentionArgs& a, int g, int h0, int row, int lo, int hi) {
    const float* kg = a.k + g * a.k_head_stride;
    const float* vg = a.v + g * a.v_head_stride;
    const __m512 qscale = _mm512_set1_ps(a.scale * kLog2e);
    // Scores need q in registers, the value pass needs o: both at once would spill (NV = 8),
    // so o lives in memory between chunks.
    __m512 q[NH][NV];
    alignas(64) float o[NH][NV * 16];
    for (int h = 0; h < NH; ++h) {
        const float* qp = a.q + row * a.q_row_stride + (h0 + h) * a.q_head_stride;
        for (int v = 0; v < NV; ++v) q[h][v] = _mm512_mul_ps(_mm512_loadu_ps(qp + 16 * v), qscale);
    }
    std::memset(o, 0, sizeof o);
    float alpha[NH];
    float m[NH], l[NH];
    for (int h = 0; h < NH; ++h) m[h] = -INFINITY, l[h] = 0.0f;
    alignas(64) float s[NH][kDecodeChunk];
    for (int j0 = lo; j0 < hi; j0 += kDecodeChunk) {
        const int n = std::min(kDecodeChunk, hi - j0);
        for (int j = 0; j < n; ++j) {
            const float* kp = kg + (j0 + j) * a.k_row_stride;
            __m512 acc[NH];
            for (int h = 0; h < NH; ++h) acc[h] = _mm512_setzero_ps();
            for (int v = 0; v < NV; ++v) {
                const __m512 kv = _mm512_loadu_ps(kp + 16 * v);
                for (int h = 0; h < NH; ++h) acc[h] = _mm512_fmadd_ps(kv, q[h][v], acc[h]);
            }
            for (int h = 0; h < NH; ++h) s[h][j] = _mm512_reduce_add_ps(acc[h]);
        }
        for (int h = 0; h < NH; ++h) {
            __m512 mx = _mm512_set1_ps(m[h]);
            for (int j = 0; j < n; j += 16) {
                mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, tail_mask(n - j), s[h] + j));
            }
            const float m_new = _mm512_reduce_max_ps(mx);
            const __m512 mv = _mm512_set1_ps(m_new);
            __m512 sum = _mm512_setzero_ps();
            for (int j = 0; j < n; j += 16) {
                const __mmask16 t = tail_mask(n - j);
                const __m512 p = exp2_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(t, s[h] + j), mv));
                _mm512_mask_storeu_ps(s[h] + j, t, p);
                sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(t, p));
            }
            alpha[h] = _mm512_cvtss_f32(exp2_ps(_mm512_set1_ps(m[h] - m_new)));  // m = -inf: 0
            l[h] = l[h] * alpha[h] + _mm512_reduce_add_ps(sum);
            m[h] = m_new;
        }
        __m512 acc[NH][NV];
        for (int h = 0; h < NH; ++h) {
            const __m512 al = _mm512_set1_ps(alpha[h]);
            for (int v = 0; v < NV; ++v)
                acc[h][v] = _mm512_mul_ps(_mm512_load_ps(o[h] + 16 * v), al);
        }
        for (int j = 0; j < n; ++j) {
            const float* vp = vg + (j0 + j) * a.v_row_stride;
            __m512 p[NH];
            for (int h = 0; h < NH; ++h) p[h] = _mm512_set1_ps(s[h][j]);
            for (int v = 0; v < NV; ++v) {
                const __m512 vv = _mm512_loadu_ps(vp + 16 * v);
                for (int h = 0; h < NH; ++h) acc[h][v] = _mm512_fmadd_ps(p[h], vv, acc[h][v]);
            }
        }
        for (int h = 0; h < NH; ++h) {
            for (int v = 0; v < NV; ++v) _mm512_store_ps(o[h] + 16 * v, acc[h][v]);
        }
    }
    for (int h = 0; h < NH; ++h) {
        float* out = a.out + row * a.out_row_stride + (h0 + h) * a.out_head_stride;
        const __m512 inv = _mm512_set1_ps(1.0f / l[h]);
        for (int v = 0; v < NV; ++v) {
            _mm512_storeu_ps(out + 16 * v, _mm512_mul_ps(_mm512_load_ps(o[h] + 16 * v), inv));
        }
    }
}

template <int NV>
void decode_row_heads(const AttentionArgs& a, int g, int group, int row, int lo, int hi) {
    int h = 0;
    for (; h + 2 <= group; h += 2) decode_row<NV, 2>(a, g, g * group + h, row, lo, hi);
    if (h < group) decode_row<NV, 1>(a, g, g * group + h, row, lo, hi);
}

bool decode_supported(int head_dim) { return head_dim == 64 || head_dim == 128; }

void decode_rows(const AttentionArgs& a, int g, int group, int row0, int n_rows, int lo,
                 const int* hi) {
    for (int rr = 0; rr < n_rows; ++rr) {
        if (a.head_dim == 64) {
            decode_row_heads<4>(a, g, group, row0 + rr, lo, hi[rr]);
        } else {
            decode_row_heads<8>(a, g, group, row0 + rr, lo, hi[rr]);
        }
    }
}

void zero_row(const AttentionArgs& a, int g, int group, int row) {
    for (int hh = 0; hh < group; ++hh) {
        float* out = a.out + row * a.out_row_stride + (g * group + hh) * a.out_head_stride;
        std::fill(out, out + a.head_dim, 0.0f);
    }
}

}  // namespace

void attention_run_task(const AttentionArgs& a, int task, int num_tasks) {
    const int n_kvh = attention_kv_heads(a);
    const int group = a.n_heads / std::max(1, n_kvh);
    if (a.head_dim % 16 != 0 || a.head_dim > kMaxHeadDim || group < 1 || group > kItems) {
        return simd::attention_run_task<xsimd::avx512bw>(a, task, num_tasks);
    }
    AttentionTask t;
    if (!attention_task(a, task, num_tasks, &t)) return;
    const int granule = attention_row_granule(a);
    static thread_local FlashScratch scratch;
    FlashBlock blocks[kBatch];
    int n_blocks = 0, batch_lo = 0;
    int seg = 0;
    int hi[kItems];
    for (int r = t.row_begin; r < t.row_end;) {
        int lo, h;
        attention_key_range(a, r, &seg, &lo, &h);
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
            int lo2, h2, seg2 = seg;
            attention_key_range(a, r + n, &seg2, &lo2, &h2);
            if (lo2 != lo || h2 <= lo2) break;
            hi[n++] = h2;
        }
        if (n * group <= 4 && decode_supported(a.head_dim)) {
            decode_rows(a, t.kv_head, group, r, n, lo, hi);
        } else {
            if (n_blocks == kBatch || (n_blocks > 0 && lo != batch_lo)) {
                flash_batch(a, t.kv_head, group, batch_lo, blocks, n_blocks, &scratch);
                n_blocks = 0;
            }
            batch_lo = lo;
            flash_init(a, t.kv_head, group, r, n, hi, &blocks[n_blocks], scratch.qt[n_blocks],
                       scratch.ot[n_blocks]);
            ++n_blocks;
        }
        r += n;
    }
    if (n_blocks > 0) flash_batch(a, t.kv_head, group, batch_lo, blocks, n_blocks, &scratch);
}

}  // namespace qvl::kernels::avx512
