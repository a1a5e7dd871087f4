// AVX-512 f32 GEMM: a 14x32 register tile (28 zmm accumulators), weights widened from bf16
// (or rounded to bf16 for kBF16 precision) while packing. The GEMV is in gemv_avx512.cpp.
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
#include "kernels/x86/gemm_driver.h"

namespace qvl::kernels::avx512 {
namespace {
using x86::lanes16;

struct KernelF32 {
    using Packed = float;
    static constexpr int kMR = detail::kBlockingAvx512.mr, kNR = detail::kBlockingAvx512.nr,
                         kKC = detail::kBlockingAvx512.kc, kMC = detail::kBlockingAvx512.mc,
                         kNC = detail::kBlockingAvx512.nc;

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

    static void pack_b(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                       float* out) {
        if (p.w_type == WeightType::kBF16) {
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

    static void epilogue(const GemmArgs& p, const float* acc, const float* acc2, std::ptrdiff_t ld,
                         int m0, int m1, int n0, int n1) {
        detail::gemm_epilogue_avx512(p, acc, acc2, ld, m0, m1, n0, n1);
    }
};

}  // namespace
}  // namespace qvl::kernels::avx512

namespace qvl::kernels::detail {

void gemm_tile_avx512(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    gemm_tile_blocked<avx512::KernelF32>(p, m0, m1, n0, n1);
}

}  // namespace qvl::kernels::detail
