// AVX512_BF16 GEMM for kBF16 precision: activations and weights packed as bf16 pairs along k,
// products on vdpbf16ps into f32 accumulators, 14x32 register tile (28 zmm). The GEMV stays on
// the f32 path with rounded operands (it is bound by the weight stream, not by arithmetic).
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

namespace qvl::kernels::avx512bf16 {
namespace {

using detail::GemmProblem;
using x86::lanes16;
using x86::lanes32;

// 32 f32 values (n valid, rest zero) rounded to bf16 and packed as 16 pairs, as zmm bits.
__m512 load_f32_as_pairs(const float* src, int n) {
    const __m512 lo = _mm512_maskz_loadu_ps(lanes16(std::clamp(n, 0, 16)), src);
    const __m512 hi = _mm512_maskz_loadu_ps(lanes16(std::clamp(n - 16, 0, 16)), src + 16);
    return _mm512_castsi512_ps(__m512i(_mm512_cvtne2ps_pbh(hi, lo)));
}

struct KernelBf16 {
    using Packed = std::uint32_t;
    static constexpr int kMR = 14, kNR = 32, kKC = 512, kMC = 112, kNC = 512;

    static int packed_k(int kc) { return (kc + 1) / 2; }

    static void pack_a(const GemmProblem& p, int i0, int rows, int p0, int kc, Packed* out) {
        const int ks = packed_k(kc);
        for (int q = 0; q * kMR < rows; ++q) {
            Packed* panel = out + std::ptrdiff_t(q) * ks * kMR;
            const int nr = std::min(kMR, rows - q * kMR);
            for (int kb = 0; kb < kc; kb += 32) {
                const int nk = std::min(32, kc - kb);
                __m512 r[16];
                for (int i = 0; i < 16; ++i) {
                    if (i < nr) {
                        const float* src = p.a + std::ptrdiff_t(i0 + q * kMR + i) * p.lda + p0 + kb;
                        r[i] = load_f32_as_pairs(src, nk);
                    } else {
                        r[i] = _mm512_setzero_ps();
                    }
                }
                x86::transpose16(r);
                for (int t = 0; t < (nk + 1) / 2; ++t) {
                    _mm512_mask_storeu_ps(panel + std::ptrdiff_t(kb / 2 + t) * kMR, lanes16(kMR),
                                          r[t]);
                }
            }
        }
    }

    static __m512 load_w_pairs(const GemmProblem& p, const void* w, int j, int kk, int n) {
        if (p.w_type == WeightType::kBF16) {
            const auto* row = static_cast<const std::uint16_t*>(w) + std::ptrdiff_t(j) * p.ldw;
            return _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(lanes32(n), row + kk));
        }
        const float* row = static_cast<const float*>(w) + std::ptrdiff_t(j) * p.ldw;
        return load_f32_as_pairs(row + kk, n);
    }

    static void pack_b(const GemmProblem& p, const void* w, int j0, int cols, int p0, int kc,
                       Packed* out) {
        const int ks = packed_k(kc);
        for (int q = 0; q * kNR < cols; ++q) {
            Packed* panel = out + std::ptrdiff_t(q) * ks * kNR;
            for (int kb = 0; kb < kc; kb += 32) {
                const int nk = std::min(32, kc - kb);
                for (int h = 0; h < kNR / 16; ++h) {
                    const int c0 = q * kNR + h * 16;
                    __m512 r[16];
                    for (int i = 0; i < 16; ++i) {
                        r[i] = c0 + i < cols ? load_w_pairs(p, w, j0 + c0 + i, p0 + kb, nk)
                                             : _mm512_setzero_ps();
                    }
                    x86::transpose16(r);
                    for (int t = 0; t < (nk + 1) / 2; ++t) {
                        _mm512_store_ps(reinterpret_cast<float*>(
                                            panel + std::ptrdiff_t(kb / 2 + t) * kNR + h * 16),
                                        r[t]);
                    }
                }
            }
        }
    }

    static void ukernel(int ks, const Packed* a, const Packed* b, float* c, std::ptrdiff_t ldc,
                        bool accumulate) {
        __m512 c0[kMR], c1[kMR];
#pragma GCC unroll 14
        for (int r = 0; r < kMR; ++r) {
            c0[r] = accumulate ? _mm512_load_ps(c + r * ldc) : _mm512_setzero_ps();
            c1[r] = accumulate ? _mm512_load_ps(c + r * ldc + 16) : _mm512_setzero_ps();
        }
        for (int kk = 0; kk < ks; ++kk) {
            const __m512bh b0 = __m512bh(_mm512_load_si512(b + kk * kNR));
            const __m512bh b1 = __m512bh(_mm512_load_si512(b + kk * kNR + 16));
#pragma GCC unroll 14
            for (int r = 0; r < kMR; ++r) {
                const __m512bh av = __m512bh(_mm512_set1_epi32(int(a[kk * kMR + r])));
                c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
                c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
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
}  // namespace qvl::kernels::avx512bf16

namespace qvl::kernels::detail {

void gemm_tile_avx512bf16(const GemmProblem& p, int m0, int m1, int n0, int n1) {
    gemm_tile_blocked<avx512bf16::KernelBf16>(p, m0, m1, n0, n1);
}

void gemv_tile_avx512bf16(const GemmProblem& p, int m0, int m1, int n0, int n1) {
    gemv_tile_avx512(p, m0, m1, n0, n1);
}

}  // namespace qvl::kernels::detail
