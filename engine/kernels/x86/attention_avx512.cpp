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
// GCC 12 reports the undefined upper lanes inside _mm512_reduce_*_ps as maybe-uninitialized; a
// false positive, silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/attention_plan.h"
#include "kernels/x86/ops_table.h"

namespace qvl::kernels::avx512 {

namespace {

constexpr int kItems = 32;         // (head, row) lanes of a flash block
constexpr int kKeyBlock = 64;      // keys per online-softmax step (flash)
constexpr int kDecodeChunk = 256;  // keys per online-softmax step (decode)
constexpr int kMaxHeadDim = 256;
constexpr float kLog2e = 1.4426950408889634f;

// 2^x, relative error ~1e-7: x = n + f with |f| <= 1/2, 2^f by its degree-7 Taylor series
// (truncation < 5e-9), 2^n applied exactly by vscalefps. -inf (and anything below -160) gives 0.
inline __m512 exp2_ps(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-160.0f)), _mm512_set1_ps(128.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(1.525273380405984e-05f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.540353039338161e-04f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-03f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618129107628477e-03f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550410866482158e-02f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402265069591007e-01f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931471805599453e-01f));
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

// One flash block: rows [row0, row0 + n_rows) of kv head g's group, all seeing keys from lo,
// row r seeing keys below hi[r - row0]. Lane (hh, rr) = hh * rows_per_head + rr.
void flash_block(const AttentionArgs& a, int g, int group, int row0, int n_rows, int lo,
                 const int* hi) {
    const int hd = a.head_dim;
    const int rows_per_head = kItems / group;
    alignas(64) float qt[kMaxHeadDim * kItems];
    alignas(64) float ot[kMaxHeadDim * kItems];
    alignas(64) float st[kKeyBlock * kItems];
    alignas(64) int lane_hi[kItems];
    int hi_max = lo, hi_min = a.n_kv;
    for (int rr = 0; rr < n_rows; ++rr) {
        hi_max = std::max(hi_max, hi[rr]);
        hi_min = std::min(hi_min, hi[rr]);
    }
    // Pack Q (scaled into the exp2 domain); empty lanes are zero and never masked.
    std::memset(qt, 0, sizeof(float) * hd * kItems);
    std::memset(ot, 0, sizeof(float) * hd * kItems);
    const float qscale = a.scale * kLog2e;
    for (int lane = 0; lane < kItems; ++lane) {
        const int hh = lane / rows_per_head, rr = lane % rows_per_head;
        lane_hi[lane] = hi_max;
        if (hh >= group || rr >= n_rows) continue;
        lane_hi[lane] = hi[rr];
        const float* q = a.q + (row0 + rr) * a.q_row_stride + (g * group + hh) * a.q_head_stride;
        for (int d = 0; d < hd; ++d) qt[d * kItems + lane] = q[d] * qscale;
    }
    const __m512i hi0 = _mm512_load_si512(lane_hi), hi1 = _mm512_load_si512(lane_hi + 16);
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    __m512 m0 = neg_inf, m1 = neg_inf;
    __m512 l0 = _mm512_setzero_ps(), l1 = _mm512_setzero_ps();
    const float* kg = a.k + g * a.k_head_stride;
    const float* vg = a.v + g * a.v_head_stride;

    for (int j0 = lo; j0 < hi_max; j0 += kKeyBlock) {
        const int nb = std::min(kKeyBlock, hi_max - j0);
        qk_rows(kg + j0 * a.k_row_stride, a.k_row_stride, qt, hd, nb, st);
        if (j0 + nb > hi_min) {  // some lane stops inside this block: mask its later keys
            for (int j = 0; j < nb; ++j) {
                const __m512i jv = _mm512_set1_epi32(j0 + j);
                float* s = st + j * kItems;
                _mm512_store_ps(s, _mm512_mask_mov_ps(neg_inf, _mm512_cmplt_epi32_mask(jv, hi0),
                                                      _mm512_load_ps(s)));
                _mm512_store_ps(s + 16,
                                _mm512_mask_mov_ps(neg_inf, _mm512_cmplt_epi32_mask(jv, hi1),
                                                   _mm512_load_ps(s + 16)));
            }
        }
        __m512 mx0 = m0, mx1 = m1;
        for (int j = 0; j < nb; ++j) {
            mx0 = _mm512_max_ps(mx0, _mm512_load_ps(st + j * kItems));
            mx1 = _mm512_max_ps(mx1, _mm512_load_ps(st + j * kItems + 16));
        }
        // A lane that has seen only masked keys keeps max -inf; subtract 0 there instead.
        const __m512 sub0 =
            _mm512_mask_mov_ps(mx0, _mm512_cmpeq_ps_mask(mx0, neg_inf), _mm512_setzero_ps());
        const __m512 sub1 =
            _mm512_mask_mov_ps(mx1, _mm512_cmpeq_ps_mask(mx1, neg_inf), _mm512_setzero_ps());
        const __m512 alpha0 = exp2_ps(_mm512_sub_ps(m0, sub0));
        const __m512 alpha1 = exp2_ps(_mm512_sub_ps(m1, sub1));
        m0 = mx0;
        m1 = mx1;
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
        l0 = _mm512_fmadd_ps(l0, alpha0, sum0);
        l1 = _mm512_fmadd_ps(l1, alpha1, sum1);
        const __mmask16 same = _mm512_cmpeq_ps_mask(alpha0, _mm512_set1_ps(1.0f)) &
                               _mm512_cmpeq_ps_mask(alpha1, _mm512_set1_ps(1.0f));
        if (same != 0xffff) {
            for (int d = 0; d < hd; ++d) {
                float* o = ot + d * kItems;
                _mm512_store_ps(o, _mm512_mul_ps(_mm512_load_ps(o), alpha0));
                _mm512_store_ps(o + 16, _mm512_mul_ps(_mm512_load_ps(o + 16), alpha1));
            }
        }
        const float* vb = vg + j0 * a.v_row_stride;
        for (int d0 = 0; d0 < hd; d0 += 8)
            pv_tile(vb + d0, a.v_row_stride, st, nb, ot + d0 * kItems);
    }

    alignas(64) float inv_l[kItems];
    _mm512_store_ps(inv_l, _mm512_div_ps(_mm512_set1_ps(1.0f), l0));
    _mm512_store_ps(inv_l + 16, _mm512_div_ps(_mm512_set1_ps(1.0f), l1));
    for (int hh = 0; hh < group; ++hh) {
        for (int rr = 0; rr < n_rows; ++rr) {
            const int lane = hh * rows_per_head + rr;
            float* out =
                a.out + (row0 + rr) * a.out_row_stride + (g * group + hh) * a.out_head_stride;
            for (int d = 0; d < hd; ++d) out[d] = ot[d * kItems + lane] * inv_l[lane];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decode path: one query row, NH (1 or 2) heads of the group, keys [lo, hi).

template <int NV, int NH>
void decode_row(const AttentionArgs& a, int g, int h0, int row, int lo, int hi) {
    const float* kg = a.k + g * a.k_head_stride;
    const float* vg = a.v + g * a.v_head_stride;
    const __m512 qscale = _mm512_set1_ps(a.scale * kLog2e);
    __m512 q[NH][NV], o[NH][NV];
    for (int h = 0; h < NH; ++h) {
        const float* qp = a.q + row * a.q_row_stride + (h0 + h) * a.q_head_stride;
        for (int v = 0; v < NV; ++v) {
            q[h][v] = _mm512_mul_ps(_mm512_loadu_ps(qp + 16 * v), qscale);
            o[h][v] = _mm512_setzero_ps();
        }
    }
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
            const __m512 alpha = exp2_ps(_mm512_set1_ps(m[h] - m_new));  // m = -inf: 0
            l[h] = l[h] * _mm512_cvtss_f32(alpha) + _mm512_reduce_add_ps(sum);
            m[h] = m_new;
            for (int v = 0; v < NV; ++v) o[h][v] = _mm512_mul_ps(o[h][v], alpha);
        }
        for (int j = 0; j < n; ++j) {
            const float* vp = vg + (j0 + j) * a.v_row_stride;
            __m512 p[NH];
            for (int h = 0; h < NH; ++h) p[h] = _mm512_set1_ps(s[h][j]);
            for (int v = 0; v < NV; ++v) {
                const __m512 vv = _mm512_loadu_ps(vp + 16 * v);
                for (int h = 0; h < NH; ++h) o[h][v] = _mm512_fmadd_ps(p[h], vv, o[h][v]);
            }
        }
    }
    for (int h = 0; h < NH; ++h) {
        float* out = a.out + row * a.out_row_stride + (h0 + h) * a.out_head_stride;
        const __m512 inv = _mm512_set1_ps(1.0f / l[h]);
        for (int v = 0; v < NV; ++v) _mm512_storeu_ps(out + 16 * v, _mm512_mul_ps(o[h][v], inv));
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
    if (a.head_dim % 8 != 0 || a.head_dim > kMaxHeadDim || group < 1 || group > kItems) {
        return ref::attention_run_task(a, task, num_tasks);
    }
    AttentionTask t;
    if (!attention_task(a, task, num_tasks, &t)) return;
    const int granule = attention_row_granule(a);
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
            flash_block(a, t.kv_head, group, r, n, lo, hi);
        }
        r += n;
    }
}

}  // namespace qvl::kernels::avx512
