// AVX-512 f32 GEMM: a 14x32 register tile (28 zmm accumulators), weights widened from bf16
// (or rounded to bf16 for kBF16 precision) while packing. Small m (decode) runs the same packing
// and micro-kernel with streaming blocks (gemm_internal.h kGemvMaxM), so every row is
// bit-identical to what the large-m path gives it.
// GCC 12's AVX-512 intrinsic headers build _mm512_undefined_*() from a self-initialised variable,
// which -W(maybe-)uninitialized reports once inlined here; the value is never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/gemm_internal.h"
#include "kernels/x86/avx512_util.h"
#include "kernels/x86/gemm_avx512_tier.h"
#include "kernels/x86/gemm_driver.h"
#include "kernels/x86/gemm_panel_stream.h"
#include "kernels/x86/tier_entries.h"

namespace qvl::kernels::avx512 {
namespace {
using x86::lanes16;

template <GemmBlocking B>
struct KernelF32T : x86::EpilogueAvx512 {
    using Packed = float;
    static constexpr int kMR = B.mr, kNR = B.nr, kKC = B.kc, kMC = B.mc, kNC = B.nc;

    static int packed_k(int kc) { return kc; }

    static void pack_a(const GemmArgs& p, int i0, int rows, int p0, int kc, float* out) {
        for (int q = 0; q * kMR < rows; ++q) {
            float* panel = out + std::ptrdiff_t(q) * kc * kMR;
            const int nr = std::min(kMR, rows - q * kMR);
            const float* src_rows[kMR];
            detail::gemm_a_rows(p, i0 + q * kMR, nr, p0, kc, src_rows);
            for (int kb = 0; kb < kc; kb += 16) {
                const int nk = std::min(16, kc - kb);
                __m512 r[16];
                for (int i = 0; i < 16; ++i) {
                    if (i < nr) {
                        const float* src = src_rows[i] + kb;
                        r[i] = _mm512_maskz_loadu_ps(lanes16(nk), src);
                        if (p.round_bf16()) r[i] = x86::round_bf16(r[i]);
                    } else {
                        r[i] = _mm512_setzero_ps();
                    }
                }
                x86::transpose16(r);
                for (int t = 0; t < nk; ++t) {
                    _mm512_mask_storeu_ps(panel + std::ptrdiff_t(kb + t) * kMR, lanes16(kMR), r[t]);
                }
            }
        }
    }

    // Weight rows [j0, j0 + cols) x k [p0, p0 + kc) into kNR-column panels of [kc][kNR] f32.
    // Half-panels of 16 rows stream along k, 16x16 transposes. (Software prefetch here measured no
    // better: 16 rows 4 KiB apart already crowd one L1 set.)
    template <int kKind>  // 0: bf16 weights, 1: f32, 2: f32 rounded to bf16
    static void pack_b_impl(const void* w, std::ptrdiff_t ldw, int j0, int cols, int p0, int kc,
                            float* out) {
        using Elem = std::conditional_t<kKind == 0, std::uint16_t, float>;
        for (int q = 0; q * kNR < cols; ++q) {
            float* panel = out + std::ptrdiff_t(q) * kc * kNR;
            for (int h = 0; h < kNR / 16; ++h) {
                const int c0 = q * kNR + h * 16;
                const int nrows = std::clamp(cols - c0, 0, 16);
                const Elem* base = static_cast<const Elem*>(w) + std::ptrdiff_t(j0 + c0) * ldw + p0;
                for (int kb = 0; kb < kc; kb += 16) {
                    const int nk = std::min(16, kc - kb);
                    const __mmask16 mk = lanes16(nk);
                    __m512 r[16];
#pragma GCC unroll 16
                    for (int i = 0; i < 16; ++i) {
                        const Elem* src = base + std::ptrdiff_t(i) * ldw + kb;
                        if (i >= nrows) {
                            r[i] = _mm512_setzero_ps();
                        } else if constexpr (kKind == 0) {
                            r[i] = x86::load_bf16x16(src, nk);
                        } else {
                            r[i] = _mm512_maskz_loadu_ps(mk, src);
                            if constexpr (kKind == 2) r[i] = x86::round_bf16(r[i]);
                        }
                    }
                    x86::transpose16(r);
                    for (int t = 0; t < nk; ++t) {
                        _mm512_store_ps(panel + std::ptrdiff_t(kb + t) * kNR + h * 16, r[t]);
                    }
                }
            }
        }
    }

    // From load-time panels (kernels/weight_panels.h): the pairs of each 16-output panel are
    // already in k order, so one shift (even k) and one mask (odd k) widen them; no transposes.
    // j0 and p0 are multiples of 16 and 2 (task columns are multiples of 32, k blocks even).
    static void pack_b_panels(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                              float* out) {
        const auto* panels = static_cast<const std::uint32_t*>(w);
        const __m512i odd_mask = _mm512_set1_epi32(int(0xffff0000u));
        for (int q = 0; q * kNR < cols; ++q) {
            float* panel = out + std::ptrdiff_t(q) * kc * kNR;
            for (int h = 0; h < kNR / 16; ++h) {
                const int c0 = q * kNR + h * 16;
                float* dst = panel + h * 16;
                if (c0 >= cols) {
                    for (int kk = 0; kk < kc; ++kk)
                        _mm512_store_ps(dst + kk * kNR, _mm512_setzero_ps());
                    continue;
                }
                const std::uint32_t* src =
                    panels + (std::ptrdiff_t((j0 + c0) / 16) * p.ldw + p0 / 2) * 16;
                for (int kk = 0; kk < kc; kk += 2) {
                    const __m512i v = _mm512_loadu_si512(src + std::ptrdiff_t(kk / 2) * 16);
                    _mm512_store_ps(dst + kk * kNR, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
                    if (kk + 1 < kc) {
                        _mm512_store_ps(dst + (kk + 1) * kNR,
                                        _mm512_castsi512_ps(_mm512_and_si512(v, odd_mask)));
                    }
                }
            }
        }
    }

    static void pack_b(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                       float* out) {
        if (p.w_type == WeightType::kBF16Panels) {
            pack_b_panels(p, w, j0, cols, p0, kc, out);
        } else if (p.w_type == WeightType::kBF16) {
            pack_b_impl<0>(w, p.ldw, j0, cols, p0, kc, out);
        } else if (p.round_bf16()) {
            pack_b_impl<2>(w, p.ldw, j0, cols, p0, kc, out);
        } else {
            pack_b_impl<1>(w, p.ldw, j0, cols, p0, kc, out);
        }
    }

    // R rows of the tile (R < kMR for the last row panel of a block: no work on padding rows).
    template <int R>
    static void ukernel(int ks, const float* a, const float* b, float* c, std::ptrdiff_t ldc,
                        bool accumulate) {
        __m512 c0[R], c1[R];
#pragma GCC unroll 14
        for (int r = 0; r < R; ++r) {
            c0[r] = accumulate ? _mm512_load_ps(c + r * ldc) : _mm512_setzero_ps();
            c1[r] = accumulate ? _mm512_load_ps(c + r * ldc + 16) : _mm512_setzero_ps();
        }
        for (int kk = 0; kk < ks; ++kk) {
            const __m512 b0 = _mm512_load_ps(b + kk * kNR);
            const __m512 b1 = _mm512_load_ps(b + kk * kNR + 16);
#pragma GCC unroll 14
            for (int r = 0; r < R; ++r) {
                const __m512 av = _mm512_set1_ps(a[kk * kMR + r]);
                c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
            }
        }
#pragma GCC unroll 14
        for (int r = 0; r < R; ++r) {
            _mm512_store_ps(c + r * ldc, c0[r]);
            _mm512_store_ps(c + r * ldc + 16, c1[r]);
        }
    }
};

using KernelF32 = KernelF32T<detail::kBlockingAvx512>;

// Small m: the same kernel with a register tile of MR rows (no zero rows packed or multiplied
// for a decode step of one sequence) and blocks sized so one pass over the weights stays in L1
// (a packed block serves only these few rows, so L2 blocking would buy nothing). Every output
// element is the same chain of operations as in KernelF32, so rows are bit-identical to its.
template <int MR>
using KernelF32Stream = KernelF32T<detail::stream_blocking(MR, 32, detail::kStreamKcF32)>;

// Small m on load-time panels (x86/gemm_panel_stream.h): KernelF32T's chain (one FMA per k in
// increasing order) read straight from the panels, widened with a shift (even k) and a mask
// (odd k).
struct PanelStreamF32 : x86::RowsToPanel16, x86::EpilogueAvx512 {
    using AElem = float;
    static constexpr int kRows = 4, kPanels = 4;
    static std::ptrdiff_t a_len(int k) { return k; }
    static void prepare_a(const GemmArgs& p, int row, float* out) {
        const float* src = p.a + std::ptrdiff_t(row) * p.lda;
        for (int kk = 0; kk < p.k; kk += 16) {
            const __mmask16 mask = lanes16(p.k - kk);
            const __m512 v = _mm512_maskz_loadu_ps(mask, src + kk);
            _mm512_mask_storeu_ps(out + kk, mask, p.round_bf16() ? x86::round_bf16(v) : v);
        }
    }
    template <int R, int G>
    static void chunk(const float* a, std::ptrdiff_t lda, const std::uint32_t* w,
                      std::ptrdiff_t panel_stride, std::ptrdiff_t t0, std::ptrdiff_t t1,
                      bool odd_tail, bool first, float* acc, std::ptrdiff_t ld_acc) {
        __m512 c[R][G];
        x86::load_acc16(c, first, acc, ld_acc);
        const __m512i odd_mask = _mm512_set1_epi32(int(0xffff0000u));
        const std::ptrdiff_t t_full = odd_tail ? t1 - 1 : t1;
        for (std::ptrdiff_t t = t0; t < t_full; ++t) {
            detail::prefetch_panels<G>(w, panel_stride, t);
            __m512 even[G], odd[G];
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                const __m512i v = _mm512_loadu_si512(w + g * panel_stride + t * 16);
                even[g] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
                odd[g] = _mm512_castsi512_ps(_mm512_and_si512(v, odd_mask));
            }
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const __m512 a0 = _mm512_set1_ps(a[r * lda + 2 * t]);
#pragma GCC unroll 4
                for (int g = 0; g < G; ++g) c[r][g] = _mm512_fmadd_ps(a0, even[g], c[r][g]);
                const __m512 a1 = _mm512_set1_ps(a[r * lda + 2 * t + 1]);
#pragma GCC unroll 4
                for (int g = 0; g < G; ++g) c[r][g] = _mm512_fmadd_ps(a1, odd[g], c[r][g]);
            }
        }
        if (odd_tail) {
            const std::ptrdiff_t t = t1 - 1;
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                const __m512i v = _mm512_loadu_si512(w + g * panel_stride + t * 16);
                const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
#pragma GCC unroll 4
                for (int r = 0; r < R; ++r) {
                    c[r][g] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + 2 * t]), even, c[r][g]);
                }
            }
        }
        x86::store_acc16(c, acc, ld_acc);
    }
    template <int R, int G>
    static void row_group(const float* a, std::ptrdiff_t lda, const std::uint16_t* w,
                          std::ptrdiff_t ldw, int live, int k, float* acc, std::ptrdiff_t ld_acc) {
        const __m512i odd_mask = _mm512_set1_epi32(int(0xffff0000u));
        x86::rows_direct16<R, G>(
            w, ldw, live, k, detail::kStreamPrefetchPairs, acc, ld_acc,
            [&](__m512& sum, int r, std::ptrdiff_t t, __m512 pair) {
                const __m512i v = _mm512_castps_si512(pair);
                const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
                sum = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + 2 * t]), even, sum);
                if (2 * t + 1 < k) {  // an odd k's last pair has no odd half
                    const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(v, odd_mask));
                    sum = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + 2 * t + 1]), odd, sum);
                }
            });
    }
};

}  // namespace
}  // namespace qvl::kernels::avx512

namespace qvl::kernels {

constinit const GemmKernels avx512::kGemmKernels =
    detail::tier_gemm_kernels<avx512::KernelF32, avx512::PanelStreamF32, avx512::KernelF32Stream, 8,
                              true>();

}  // namespace qvl::kernels
