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
#include "kernels/x86/attention_decode.h"
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

// ---------------------------------------------------------------------------------------------
// Decode path (x86/attention_decode.h): f32 products, K transposed 16 x 16 in registers.

struct F32Decode {
    static constexpr int kExpDegree = 5;  // as the f32 flash tiles (F32Tiles)

    template <int NH>
    struct Block {
        alignas(64) float qs[NH][kMaxHeadDim];
    };

    template <int NH>
    [[gnu::always_inline]] static void store_q(int h, int d, __m512 q, Block<NH>* b) {
        _mm512_store_ps(b->qs[h] + d, q);
    }

    template <int NH, class E>
    [[gnu::always_inline]] static void scores16(const AttentionArgs& a, const E* k, int nk,
                                                const Block<NH>& b, __m512 acc[NH]) {
        for (int h = 0; h < NH; ++h) acc[h] = _mm512_setzero_ps();
        for (int d0 = 0; d0 < a.head_dim; d0 += 16) {
            __m512 kt[16];
            for (int r = 0; r < 16; ++r) {
                kt[r] = r < nk ? load16(k + std::ptrdiff_t(r) * a.k_row_stride + d0)
                               : _mm512_setzero_ps();
            }
            transpose16(kt);
            for (int dd = 0; dd < 16; ++dd) {
                for (int h = 0; h < NH; ++h) {
                    acc[h] = _mm512_fmadd_ps(kt[dd], _mm512_set1_ps(b.qs[h][d0 + dd]), acc[h]);
                }
            }
        }
    }

    template <int NH>
    [[gnu::always_inline]] static void weights(int /*h*/, int /*j0*/, int nb, __m512 sub, float* s,
                                               Block<NH>* /*b*/) {
        for (int j = 0; j < nb; j += 16) {
            _mm512_store_ps(s + j, exp2_ps<kExpDegree>(_mm512_sub_ps(_mm512_load_ps(s + j), sub)));
        }
    }

    template <int NH, class E>
    [[gnu::always_inline]] static void accumulate(const AttentionArgs& a, const E* vg, int /*lo*/,
                                                  int /*hi*/, int j0, int nb, const float* alpha,
                                                  const float (*s)[kKeyBlock],
                                                  const Block<NH>& /*b*/, float (*o)[kMaxHeadDim]) {
        for (int d0 = 0; d0 < a.head_dim; d0 += 64) {
            const int nv = std::min(4, (a.head_dim - d0) / 16);
            __m512 acc[NH][4];
            decode_load_output<NH>(o, alpha, d0, nv, acc);
            for (int j = 0; j < nb; ++j) {
                const E* vp = vg + std::ptrdiff_t(j0 + j) * a.v_row_stride + d0;
                for (int v = 0; v < nv; ++v) {
                    const __m512 vv = load16(vp + 16 * v);
                    for (int h = 0; h < NH; ++h) {
                        acc[h][v] = _mm512_fmadd_ps(vv, _mm512_set1_ps(s[h][j]), acc[h][v]);
                    }
                }
            }
            decode_store_output<NH>(acc, d0, nv, o);
        }
    }
};

// Traits of the shared flash driver (x86/attention_flash.h) for f32 products.
struct F32Tiles {
    static constexpr int kExpDegree = F32Decode::kExpDegree;  // one polynomial for both paths
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
    // copying per key block instead re-read K and V for every batch.
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
        return decode_small<F32Decode>(a, g, group, row, n, lo, hi);
    }
};

}  // namespace

void attention_run_task(const AttentionArgs& a, int task, int num_tasks) {
    if (!flash_supported(a)) return simd::attention_run_task<xsimd::avx512bw>(a, task, num_tasks);
    flash_run_task<F32Tiles>(a, task, num_tasks);
}

}  // namespace qvl::kernels::avx512
