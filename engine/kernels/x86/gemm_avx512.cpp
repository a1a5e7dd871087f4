// AVX-512 f32 GEMM: a 14x32 register tile (28 zmm accumulators), weights widened from bf16
// (or rounded to bf16 for kBF16 precision) while packing. The GEMV is in gemv_avx512.cpp.
// GCC 12's AVX-512 intrinsic headers build _mm512_undefined_*() from a self-initialised variable,
// which -W(maybe-)uninitialized reports once inlined here; the value is never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/gemm_internal.h"
#include "kernels/x86/avx512_util.h"
#include "kernels/x86/gemm_driver.h"

namespace qvl::kernels::avx512 {
namespace {

using detail::GemmProblem;
using x86::lanes16;

struct KernelF32 {
    using Packed = float;
    static constexpr int kMR = 14, kNR = 32, kKC = 256, kMC = 112, kNC = 512;

    static int packed_k(int kc) { return kc; }

    // Loads 16 values of k (n valid) from weight row j as f32.
    static __m512 load_w(const GemmProblem& p, const void* w, int j, int kk, int n) {
        if (p.w_type == WeightType::kBF16) {
            const auto* row = static_cast<const std::uint16_t*>(w) + std::ptrdiff_t(j) * p.ldw;
            return x86::load_bf16x16(row + kk, n);
        }
        const float* row = static_cast<const float*>(w) + std::ptrdiff_t(j) * p.ldw;
        const __m512 v = _mm512_maskz_loadu_ps(lanes16(n), row + kk);
        return p.round_bf16 ? x86::round_bf16(v) : v;
    }

    static void pack_a(const GemmProblem& p, int i0, int rows, int p0, int kc, float* out) {
        for (int q = 0; q * kMR < rows; ++q) {
            float* panel = out + std::ptrdiff_t(q) * kc * kMR;
            const int nr = std::min(kMR, rows - q * kMR);
            for (int kb = 0; kb < kc; kb += 16) {
                const int nk = std::min(16, kc - kb);
                __m512 r[16];
                for (int i = 0; i < 16; ++i) {
                    if (i < nr) {
                        const float* src = p.a + std::ptrdiff_t(i0 + q * kMR + i) * p.lda + p0 + kb;
                        r[i] = _mm512_maskz_loadu_ps(lanes16(nk), src);
                        if (p.round_bf16) r[i] = x86::round_bf16(r[i]);
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

    static void pack_b(const GemmProblem& p, const void* w, int j0, int cols, int p0, int kc,
                       float* out) {
        for (int q = 0; q * kNR < cols; ++q) {
            float* panel = out + std::ptrdiff_t(q) * kc * kNR;
            for (int kb = 0; kb < kc; kb += 16) {
                const int nk = std::min(16, kc - kb);
                for (int h = 0; h < kNR / 16; ++h) {
                    const int c0 = q * kNR + h * 16;
                    __m512 r[16];
                    for (int i = 0; i < 16; ++i) {
                        r[i] = c0 + i < cols ? load_w(p, w, j0 + c0 + i, p0 + kb, nk)
                                             : _mm512_setzero_ps();
                    }
                    x86::transpose16(r);
                    for (int t = 0; t < nk; ++t) {
                        _mm512_store_ps(panel + std::ptrdiff_t(kb + t) * kNR + h * 16, r[t]);
                    }
                }
            }
        }
    }

    static void ukernel(int ks, const float* a, const float* b, float* c, std::ptrdiff_t ldc,
                        bool accumulate) {
        __m512 c0[kMR], c1[kMR];
#pragma GCC unroll 14
        for (int r = 0; r < kMR; ++r) {
            c0[r] = accumulate ? _mm512_load_ps(c + r * ldc) : _mm512_setzero_ps();
            c1[r] = accumulate ? _mm512_load_ps(c + r * ldc + 16) : _mm512_setzero_ps();
        }
        for (int kk = 0; kk < ks; ++kk) {
            const __m512 b0 = _mm512_load_ps(b + kk * kNR);
            const __m512 b1 = _mm512_load_ps(b + kk * kNR + 16);
#pragma GCC unroll 14
            for (int r = 0; r < kMR; ++r) {
                const __m512 av = _mm512_set1_ps(a[kk * kMR + r]);
                c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
            }
        }
#pragma GCC unroll 14
        for (int r = 0; r < kMR; ++r) {
            _mm512_store_ps(c + r * ldc, c0[r]);
            _mm512_store_ps(c + r * ldc + 16, c1[r]);
        }
    }

    static void epilogue(const GemmProblem& p, const float* acc, const float* acc2,
                         std::ptrdiff_t ld, int m0, int m1, int n0, int n1) {
        detail::gemm_epilogue(p, acc, acc2, ld, m0, m1, n0, n1);
    }
};

}  // namespace
}  // namespace qvl::kernels::avx512

namespace qvl::kernels::detail {

void gemm_tile_avx512(const GemmProblem& p, int m0, int m1, int n0, int n1) {
    gemm_tile_blocked<avx512::KernelF32>(p, m0, m1, n0, n1);
}

}  // namespace qvl::kernels::detail
