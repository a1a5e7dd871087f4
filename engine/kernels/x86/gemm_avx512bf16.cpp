// AVX512_BF16 GEMM for kBF16 precision: activations and weights packed as bf16 pairs along k,
// products on vdpbf16ps into f32 accumulators, 14x32 register tile (28 zmm); and the matching
// GEMV (m <= kGemvMaxM), weight rows read as bf16 pairs straight from memory.
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

namespace qvl::kernels::avx512bf16 {
namespace {
using x86::lanes16;
using x86::lanes32;

// 32 f32 values (n valid, rest zero) rounded to bf16 and packed as 16 pairs, as zmm bits.
inline __m512 load_f32_as_pairs(const float* src, int n) {
    const __m512 lo = _mm512_maskz_loadu_ps(lanes16(std::clamp(n, 0, 16)), src);
    const __m512 hi = _mm512_maskz_loadu_ps(lanes16(std::clamp(n - 16, 0, 16)), src + 16);
    return _mm512_castsi512_ps(__m512i(_mm512_cvtne2ps_pbh(hi, lo)));
}

struct KernelBf16 {
    using Packed = std::uint32_t;
    static constexpr int kMR = detail::kBlockingAvx512Bf16.mr, kNR = detail::kBlockingAvx512Bf16.nr,
                         kKC = detail::kBlockingAvx512Bf16.kc, kMC = detail::kBlockingAvx512Bf16.mc,
                         kNC = detail::kBlockingAvx512Bf16.nc;

    static int packed_k(int kc) { return (kc + 1) / 2; }

    static void pack_a(const GemmArgs& p, int i0, int rows, int p0, int kc, Packed* out) {
        const int ks = packed_k(kc);
        for (int q = 0; q * kMR < rows; ++q) {
            Packed* panel = out + std::ptrdiff_t(q) * ks * kMR;
            const int nr = std::min(kMR, rows - q * kMR);
            const float* src_rows[kMR];
            detail::gemm_a_rows(p, i0 + q * kMR, nr, p0, kc, src_rows);
            for (int kb = 0; kb < kc; kb += 32) {
                const int nk = std::min(32, kc - kb);
                __m512 r[16];
                for (int i = 0; i < 16; ++i) {
                    if (i < nr) {
                        const float* src = src_rows[i] + kb;
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

    // Weight rows [j0, j0 + cols) x k [p0, p0 + kc) into kNR-column panels of [ks][kNR] bf16
    // pairs. Half-panels of 16 rows stream along k, 16x16 transposes.
    template <bool kBf16W>
    static void pack_b_impl(const void* w, std::ptrdiff_t ldw, int j0, int cols, int p0, int kc,
                            Packed* out) {
        using Elem = std::conditional_t<kBf16W, std::uint16_t, float>;
        const int ks = packed_k(kc);
        for (int q = 0; q * kNR < cols; ++q) {
            Packed* panel = out + std::ptrdiff_t(q) * ks * kNR;
            for (int h = 0; h < kNR / 16; ++h) {
                const int c0 = q * kNR + h * 16;
                const int nrows = std::clamp(cols - c0, 0, 16);
                const Elem* base = static_cast<const Elem*>(w) + std::ptrdiff_t(j0 + c0) * ldw + p0;
                for (int kb = 0; kb < kc; kb += 32) {
                    const int nk = std::min(32, kc - kb);
                    __m512 r[16];
#pragma GCC unroll 16
                    for (int i = 0; i < 16; ++i) {
                        const Elem* src = base + std::ptrdiff_t(i) * ldw + kb;
                        if (i >= nrows) {
                            r[i] = _mm512_setzero_ps();
                        } else if constexpr (kBf16W) {
                            r[i] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(lanes32(nk), src));
                        } else {
                            r[i] = load_f32_as_pairs(src, nk);
                        }
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

    static void pack_b(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                       Packed* out) {
        if (p.w_type == WeightType::kBF16) {
            pack_b_impl<true>(w, p.ldw, j0, cols, p0, kc, out);
        } else {
            pack_b_impl<false>(w, p.ldw, j0, cols, p0, kc, out);
        }
    }

    // R rows of the tile (R < kMR for the last row panel of a block: no work on padding rows).
    template <int R>
    static void ukernel(int ks, const Packed* a, const Packed* b, float* c, std::ptrdiff_t ldc,
                        bool accumulate) {
        __m512 c0[R], c1[R];
#pragma GCC unroll 14
        for (int r = 0; r < R; ++r) {
            c0[r] = accumulate ? _mm512_load_ps(c + r * ldc) : _mm512_setzero_ps();
            c1[r] = accumulate ? _mm512_load_ps(c + r * ldc + 16) : _mm512_setzero_ps();
        }
        for (int kk = 0; kk < ks; ++kk) {
            const __m512bh b0 = __m512bh(_mm512_load_si512(b + kk * kNR));
            const __m512bh b1 = __m512bh(_mm512_load_si512(b + kk * kNR + 16));
#pragma GCC unroll 14
            for (int r = 0; r < R; ++r) {
                const __m512bh av = __m512bh(_mm512_set1_epi32(int(a[kk * kMR + r])));
                c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
                c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
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

// GEMV for kBF16 precision: activations pre-converted to bf16 pairs, weight rows loaded as
// pairs straight from memory (no widening), one vdpbf16ps per 32 k per (row, activation row).
template <bool kBf16W>
__m512bh load_w_pairs(const void* row, int kk, int n) {
    if constexpr (kBf16W) {
        const auto* r = static_cast<const std::uint16_t*>(row) + kk;
        return __m512bh(n >= 32 ? _mm512_loadu_si512(r) : _mm512_maskz_loadu_epi16(lanes32(n), r));
    } else {
        return __m512bh(
            _mm512_castps_si512(load_f32_as_pairs(static_cast<const float*>(row) + kk, n)));
    }
}

template <int M, int R, bool kBf16W>
[[gnu::always_inline]] inline void gemv_step(const std::uint32_t* a, std::ptrdiff_t lda_pairs,
                                             const void* const* rows, int kk, int n,
                                             __m512 (&acc)[M][R]) {
    __m512bh wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load_w_pairs<kBf16W>(rows[r], kk, n);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
        // The activation pairs are padded with zeros to a multiple of 16 pairs.
        const __m512bh av = __m512bh(_mm512_load_si512(a + i * lda_pairs + kk / 2));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], av, wv[r]);
    }
}

template <int M, int R, bool kBf16W>
void gemv_block(const std::uint32_t* a, std::ptrdiff_t lda_pairs, const unsigned char* w,
                std::ptrdiff_t ldw_bytes, int k, float* out, std::ptrdiff_t ldo) {
    const void* rows[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) rows[r] = w + r * ldw_bytes;
    __m512 acc[M][R];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_setzero_ps();
    }
    int kk = 0;
    for (; kk + 32 <= k; kk += 32) gemv_step<M, R, kBf16W>(a, lda_pairs, rows, kk, 32, acc);
    if (kk < k) gemv_step<M, R, kBf16W>(a, lda_pairs, rows, kk, k - kk, acc);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) out[i * ldo + r] = _mm512_reduce_add_ps(acc[i][r]);
    }
}

template <int R, bool kBf16W>
void gemv_rows(int m, const std::uint32_t* a, std::ptrdiff_t lda_pairs, const unsigned char* w,
               std::ptrdiff_t ldw_bytes, int k, float* out, std::ptrdiff_t ldo) {
    for (int i0 = 0; i0 < m; i0 += 4) {
        const std::uint32_t* ai = a + i0 * lda_pairs;
        float* o = out + i0 * ldo;
        switch (std::min(4, m - i0)) {
            case 1:
                gemv_block<1, R, kBf16W>(ai, lda_pairs, w, ldw_bytes, k, o, ldo);
                break;
            case 2:
                gemv_block<2, R, kBf16W>(ai, lda_pairs, w, ldw_bytes, k, o, ldo);
                break;
            case 3:
                gemv_block<3, R, kBf16W>(ai, lda_pairs, w, ldw_bytes, k, o, ldo);
                break;
            default:
                gemv_block<4, R, kBf16W>(ai, lda_pairs, w, ldw_bytes, k, o, ldo);
                break;
        }
    }
}

template <bool kBf16W>
void gemv_matrix(int m, const std::uint32_t* a, std::ptrdiff_t lda_pairs, const void* w,
                 std::ptrdiff_t ldw, int n0, int n1, int k, float* out, std::ptrdiff_t ldo) {
    const std::ptrdiff_t ldw_bytes = ldw * (kBf16W ? 2 : 4);
    const auto* base = static_cast<const unsigned char*>(w);
    int j = n0;
    for (; j + 4 <= n1; j += 4) {
        gemv_rows<4, kBf16W>(m, a, lda_pairs, base + j * ldw_bytes, ldw_bytes, k, out + (j - n0),
                             ldo);
    }
    for (; j < n1; ++j) {
        gemv_rows<1, kBf16W>(m, a, lda_pairs, base + j * ldw_bytes, ldw_bytes, k, out + (j - n0),
                             ldo);
    }
}

}  // namespace
}  // namespace qvl::kernels::avx512bf16

namespace qvl::kernels::detail {

void gemm_tile_avx512bf16(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    gemm_tile_blocked<avx512bf16::KernelBf16>(p, m0, m1, n0, n1);
}

void gemv_tile_avx512bf16(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    using namespace avx512bf16;
    const int m = m1 - m0;
    // Activations as bf16 pairs, each row padded with zeros to a multiple of 16 pairs (64 bytes).
    const std::ptrdiff_t lda_pairs = (p.k + 31) / 32 * 16;
    auto* a = static_cast<std::uint32_t*>(
        thread_scratch(kScratchA, sizeof(std::uint32_t) * std::size_t(m) * lda_pairs));
    for (int i = 0; i < m; ++i) {
        const float* src = p.a + std::ptrdiff_t(m0 + i) * p.lda;
        for (int kk = 0; kk < p.k; kk += 32) {
            _mm512_store_ps(reinterpret_cast<float*>(a + i * lda_pairs + kk / 2),
                            load_f32_as_pairs(src + kk, p.k - kk));
        }
    }
    const std::ptrdiff_t ldo = n1 - n0;
    auto* out =
        static_cast<float*>(thread_scratch(kScratchC, sizeof(float) * std::size_t(m) * ldo));
    float* out2 =
        p.w_up != nullptr
            ? static_cast<float*>(thread_scratch(kScratchC2, sizeof(float) * std::size_t(m) * ldo))
            : nullptr;
    const void* ws[2] = {p.w, p.w_up};
    float* outs[2] = {out, out2};
    for (int g = 0; g < (p.w_up != nullptr ? 2 : 1); ++g) {
        if (p.w_type == WeightType::kBF16) {
            gemv_matrix<true>(m, a, lda_pairs, ws[g], p.ldw, n0, n1, p.k, outs[g], ldo);
        } else {
            gemv_matrix<false>(m, a, lda_pairs, ws[g], p.ldw, n0, n1, p.k, outs[g], ldo);
        }
    }
    gemm_epilogue_avx512(p, out, out2, ldo, m0, m1, n0, n1);
}

}  // namespace qvl::kernels::detail
