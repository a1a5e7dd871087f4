// AVX-512 f32 attention (kernels/attention.h). Two paths, chosen per block of query rows:
//
// Flash path (vision, prefill): the shared driver of x86/attention_flash.h with f32 tiles
// (vfmadd231ps, broadcast operand straight from K or V memory).
//
// Decode path (a few items, long context): keys in lanes, K and V rows streamed once for the
// query heads sharing them, every lane computed exactly as a flash lane (bit-identical rows).
//
// bf16 K/V are widened (exactly) where they are read: into the flash path's dense copy of the
// task's keys, and at the decode path's loads.
//
// GCC 12 reports the undefined lanes inside _mm512_reduce_*_ps and friends as (maybe-)
// uninitialized; a false positive, silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/attention_plan.h"
#include "kernels/scratch.h"
#include "kernels/simd/attention_simd.h"
#include "kernels/x86/attention_flash.h"
#include "kernels/x86/tier_entries.h"

namespace qvl::kernels::avx512 {

namespace {

using namespace x86;

// ---------------------------------------------------------------------------------------------
// Flash path: f32 tiles

// St[r][0:32] = sum_d k[r * k_stride + d] * Qt[d][0:32] for r < MR.
template <int MR>
inline void qk_tile(const float* k, std::ptrdiff_t k_stride, const float* qt, int head_dim,
                    float* st) {
    __m512 acc0[MR], acc1[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
    for (int d = 0; d < head_dim; ++d) {
        const __m512 b0 = _mm512_load_ps(qt + d * kItems);
        const __m512 b1 = _mm512_load_ps(qt + d * kItems + 16);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            const __m512 av = _mm512_set1_ps(k[r * k_stride + d]);
            acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
            acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        _mm512_store_ps(st + r * kItems, acc0[r]);
        _mm512_store_ps(st + r * kItems + 16, acc1[r]);
    }
}

// Ot[r][0:32] = Ot[r][0:32] * alpha + sum_j v[j * v_stride + r] * Pt[j][0:32] for r < 8
// (8 head dims; alpha is al0 for lanes 0-15, al1 for 16-31).
template <bool kRescale>
inline void pv_tile(const float* v, std::ptrdiff_t v_stride, const float* pt, int n_keys,
                    __m512 al0, __m512 al1, float* ot) {
    __m512 acc0[8], acc1[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
        acc0[r] = _mm512_load_ps(ot + r * kItems);
        acc1[r] = _mm512_load_ps(ot + r * kItems + 16);
        if constexpr (kRescale) {
            acc0[r] = _mm512_mul_ps(acc0[r], al0);
            acc1[r] = _mm512_mul_ps(acc1[r], al1);
        }
    }
    for (int j = 0; j < n_keys; ++j) {
        const __m512 b0 = _mm512_load_ps(pt + j * kItems);
        const __m512 b1 = _mm512_load_ps(pt + j * kItems + 16);
        const float* vj = v + j * v_stride;
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) {
            const __m512 av = _mm512_set1_ps(vj[r]);
            acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
            acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
        _mm512_store_ps(ot + r * kItems, acc0[r]);
        _mm512_store_ps(ot + r * kItems + 16, acc1[r]);
    }
}

void qk_rows(const float* k, std::ptrdiff_t k_stride, const float* qt, int head_dim, int n,
             float* st) {
    for_static_tiles<kKeyTile>(n, [&](auto mr, int j) {
        qk_tile<decltype(mr)::value>(k + j * k_stride, k_stride, qt, head_dim, st + j * kItems);
    });
}

// Copies keys [key_lo, key_hi) of one kv head (elements E: float or bf16 bits, rows `stride`
// apart) into dense f32 rows [key - key_lo][hd]. Rows 12 KiB apart (the fused vision qkv) sit
// in different pages, which hardware prefetchers do not cross: rows kAhead ahead are
// prefetched in software.
template <class E>
void pack_rows(const E* head, std::ptrdiff_t stride, int key_lo, int key_hi, int hd, float* dst) {
    constexpr int kAhead = 16;
    for (int key = key_lo; key < key_hi; ++key) {
        const E* src = head + std::ptrdiff_t(key) * stride;
        if (key + kAhead < key_hi) {
            for (int c = 0; c < hd; c += 64 / int(sizeof(E))) {
                _mm_prefetch(reinterpret_cast<const char*>(src + kAhead * stride + c), _MM_HINT_T0);
            }
        }
        float* d = dst + std::ptrdiff_t(key - key_lo) * hd;
        for (int c = 0; c < hd; c += 16) _mm512_store_ps(d + c, load16(src + c));
    }
}

void decode_rows(const AttentionArgs& a, int g, int group, int row0, int n_rows, int lo,
                 const int* hi);

// Traits of the shared flash driver (x86/attention_flash.h) for f32 products.
struct F32Tiles {
    static constexpr int kExpDegree = 5;
    struct Operands {
        // K and V of the current key block: in place when the rows are dense f32 (the text KV
        // arena), else in the task's dense copy.
        const float* k = nullptr;
        const float* v = nullptr;
        std::ptrdiff_t k_stride = 0, v_stride = 0;
        // The task's keys [base, ...) as dense f32 rows (kScratchAttentionKV), or null.
        const float* k_task = nullptr;
        const float* v_task = nullptr;
        int base = 0;
    };
    static void prepare_q(int, const float*, int, Operands*) {}
    // K/V rows far apart (the vision qkv rows are 12 KiB) alias in L1 and cost a TLB miss each
    // when a tile walks 8 or 64 of them; bf16 rows need widening. Either way the task's keys
    // are copied once to dense f32 rows, which every batch of query blocks then reads:
    // copying per key block instead re-read K and V for every batch (~10 % at N = 784).
    static void begin_task(const AttentionArgs& a, int g, int key_lo, int key_hi, Operands* o) {
        const int hd = a.head_dim;
        o->k_task = o->v_task = nullptr;
        if (a.kv_type == KvType::kF32 && a.k_row_stride == hd && a.v_row_stride == hd) return;
        const std::size_t n = std::size_t(std::max(0, key_hi - key_lo)) * std::size_t(hd);
        auto* k = static_cast<float*>(
            detail::thread_scratch(detail::kScratchAttentionKV, 2 * n * sizeof(float)));
        float* v = k + n;
        if (a.kv_type == KvType::kBF16) {
            const auto* k16 = static_cast<const std::uint16_t*>(a.k) + g * a.k_head_stride;
            const auto* v16 = static_cast<const std::uint16_t*>(a.v) + g * a.v_head_stride;
            pack_rows(k16, a.k_row_stride, key_lo, key_hi, hd, k);
            pack_rows(v16, a.v_row_stride, key_lo, key_hi, hd, v);
        } else {
            const float* kf = static_cast<const float*>(a.k) + g * a.k_head_stride;
            const float* vf = static_cast<const float*>(a.v) + g * a.v_head_stride;
            pack_rows(kf, a.k_row_stride, key_lo, key_hi, hd, k);
            pack_rows(vf, a.v_row_stride, key_lo, key_hi, hd, v);
        }
        o->k_task = k, o->v_task = v, o->base = key_lo;
    }
    static void load_kv(const AttentionArgs& a, int g, int j0, int, int, Operands* o) {
        const int hd = a.head_dim;
        if (o->k_task != nullptr) {
            o->k = o->k_task + std::ptrdiff_t(j0 - o->base) * hd;
            o->v = o->v_task + std::ptrdiff_t(j0 - o->base) * hd;
            o->k_stride = o->v_stride = hd;
            return;
        }
        o->k = static_cast<const float*>(a.k) + g * a.k_head_stride + j0 * a.k_row_stride;
        o->v = static_cast<const float*>(a.v) + g * a.v_head_stride + j0 * a.v_row_stride;
        o->k_stride = a.k_row_stride, o->v_stride = a.v_row_stride;
    }
    static void scores(const Operands& o, int, const float* qt, int hd, int nb, float* st) {
        qk_rows(o.k, o.k_stride, qt, hd, nb, st);
    }
    static void weights(Operands&, float* st, int, int nb, __m512 sub0, __m512 sub1, __m512* sum0,
                        __m512* sum1) {
        exp_weights<kExpDegree>(st, nb, sub0, sub1, sum0, sum1);
    }
    static void accumulate(const Operands& o, const float* pt, int, int nb, int hd, __m512 al0,
                           __m512 al1, float* ot) {
        const bool rescale = needs_rescale(al0, al1);
        for (int d0 = 0; d0 < hd; d0 += 8) {
            float* o_d = ot + d0 * kItems;
            if (rescale) {
                pv_tile<true>(o.v + d0, o.v_stride, pt, nb, al0, al1, o_d);
            } else {
                pv_tile<false>(o.v + d0, o.v_stride, pt, nb, al0, al1, o_d);
            }
        }
    }
    static bool try_small(const AttentionArgs& a, int g, int group, int row, int n, int lo,
                          const int* hi) {
        if (n * group > 4) return false;
        decode_rows(a, g, group, row, n, lo, hi);
        return true;
    }
};

// ---------------------------------------------------------------------------------------------
// Decode path: one query row and the NH (<= 4) heads of its group, keys in lanes. Each lane
// does exactly what a flash lane does (the same 64-key blocks from lo, the same FMA order along
// head_dim and over the keys, the same softmax steps), so a row's result is bit-identical
// whichever path computes it (row invariance, kernels/attention.h); this path only skips the
// empty lanes of a one-row flash block. K is transposed 16 x 16 in registers.

template <int NH, class E>
void decode_row(const AttentionArgs& a, int g, int row, int lo, int hi) {
    const int hd = a.head_dim;
    const E* kg = static_cast<const E*>(a.k) + g * a.k_head_stride;
    const E* vg = static_cast<const E*>(a.v) + g * a.v_head_stride;
    const __m512 qscale = _mm512_set1_ps(a.scale * kLog2e);
    alignas(64) float qs[NH][kMaxHeadDim];
    alignas(64) float o[NH][kMaxHeadDim];
    alignas(64) float s[NH][kKeyBlock];
    float m[NH], l[NH], alpha[NH];
    for (int h = 0; h < NH; ++h) {
        const float* qp = a.q + row * a.q_row_stride + (g * NH + h) * a.q_head_stride;
        for (int d = 0; d < hd; d += 16) {
            _mm512_store_ps(qs[h] + d, _mm512_mul_ps(_mm512_loadu_ps(qp + d), qscale));
        }
        std::memset(o[h], 0, sizeof(float) * hd);
        m[h] = -INFINITY, l[h] = 0.0f;
    }
    for (int j0 = lo; j0 < hi; j0 += kKeyBlock) {
        const int nb = std::min(kKeyBlock, hi - j0);
        for (int j = 0; j < nb; j += 16) {
            const int nk = std::min(16, nb - j);
            // K and V rows of the keys kDecodePrefetchKeys ahead, into L2.
            const int ahead = j0 + j + kDecodePrefetchKeys;
            prefetch_rows_l2(kg, a.k_row_stride, ahead, ahead + 16, hi, hd);
            prefetch_rows_l2(vg, a.v_row_stride, ahead, ahead + 16, hi, hd);
            __m512 acc[NH];
            for (int h = 0; h < NH; ++h) acc[h] = _mm512_setzero_ps();
            for (int d0 = 0; d0 < hd; d0 += 16) {
                __m512 kt[16];
                for (int r = 0; r < 16; ++r) {
                    kt[r] = r < nk ? load16(kg + std::ptrdiff_t(j0 + j + r) * a.k_row_stride + d0)
                                   : _mm512_setzero_ps();
                }
                transpose16(kt);
                for (int dd = 0; dd < 16; ++dd) {
                    for (int h = 0; h < NH; ++h) {
                        acc[h] = _mm512_fmadd_ps(kt[dd], _mm512_set1_ps(qs[h][d0 + dd]), acc[h]);
                    }
                }
            }
            for (int h = 0; h < NH; ++h) _mm512_store_ps(s[h] + j, acc[h]);
        }
        for (int h = 0; h < NH; ++h) {
            float mx = m[h];  // the flash lane's max_ps chain, in the same order
            for (int j = 0; j < nb; ++j) mx = mx > s[h][j] ? mx : s[h][j];
            const float sub = mx == -INFINITY ? 0.0f : mx;
            alpha[h] = _mm512_cvtss_f32(exp2_ps<F32Tiles::kExpDegree>(_mm512_set1_ps(m[h] - sub)));
            const __m512 subv = _mm512_set1_ps(sub);
            for (int j = 0; j < nb; j += 16) {
                _mm512_store_ps(s[h] + j, exp2_ps<F32Tiles::kExpDegree>(
                                              _mm512_sub_ps(_mm512_load_ps(s[h] + j), subv)));
            }
            float sum = 0.0f;
            for (int j = 0; j < nb; ++j) sum += s[h][j];
            l[h] = std::fma(l[h], alpha[h], sum);
            m[h] = mx;
        }
        for (int d0 = 0; d0 < hd; d0 += 64) {
            const int nv = std::min(4, (hd - d0) / 16);
            __m512 acc[NH][4];
            for (int h = 0; h < NH; ++h) {
                const __m512 al = _mm512_set1_ps(alpha[h]);
                for (int v = 0; v < nv; ++v) {
                    acc[h][v] = _mm512_mul_ps(_mm512_load_ps(o[h] + d0 + 16 * v), al);
                }
            }
            for (int j = 0; j < nb; ++j) {
                const E* vp = vg + std::ptrdiff_t(j0 + j) * a.v_row_stride + d0;
                for (int v = 0; v < nv; ++v) {
                    const __m512 vv = load16(vp + 16 * v);
                    for (int h = 0; h < NH; ++h) {
                        acc[h][v] = _mm512_fmadd_ps(vv, _mm512_set1_ps(s[h][j]), acc[h][v]);
                    }
                }
            }
            for (int h = 0; h < NH; ++h) {
                for (int v = 0; v < nv; ++v) _mm512_store_ps(o[h] + d0 + 16 * v, acc[h][v]);
            }
        }
    }
    for (int h = 0; h < NH; ++h) {
        float* out = a.out + row * a.out_row_stride + (g * NH + h) * a.out_head_stride;
        const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_set1_ps(l[h]));
        for (int d = 0; d < hd; d += 16) {
            _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_load_ps(o[h] + d), inv));
        }
    }
}

void decode_rows(const AttentionArgs& a, int g, int group, int row0, int n_rows, int lo,
                 const int* hi) {
    for_each_decode_row(a, group, n_rows, [&](auto group_c, auto elem, int i) {
        decode_row<decltype(group_c)::value, decltype(elem)>(a, g, row0 + i, lo, hi[i]);
    });
}

}  // namespace

void attention_run_task(const AttentionArgs& a, int task, int num_tasks) {
    if (!flash_supported(a)) return simd::attention_run_task<xsimd::avx512bw>(a, task, num_tasks);
    flash_run_task<F32Tiles>(a, task, num_tasks);
}

}  // namespace qvl::kernels::avx512
