// AVX512_BF16 GEMM for kBF16 precision: activations and weights packed as bf16 pairs along k,
// products on vdpbf16ps into f32 accumulators, 14x32 register tile (28 zmm). Small m (decode)
// runs the same packing and micro-kernel with streaming blocks, so rows are bit-identical to the
// large-m path's.
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

template <GemmBlocking B>
struct KernelBf16T : x86::EpilogueAvx512 {
    using Packed = std::uint32_t;
    static constexpr int kMR = B.mr, kNR = B.nr, kKC = B.kc, kMC = B.mc, kNC = B.nc;

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

    // From load-time panels (kernels/weight_panels.h): already bf16 pairs in k order, 16
    // outputs per panel; a copy interleaves two panels into one kNR = 32 panel. j0 and p0 are
    // multiples of 16 and 2 (task columns are multiples of 32, k blocks even).
    static void pack_b_panels(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                              Packed* out) {
        const auto* panels = static_cast<const std::uint32_t*>(w);
        const int ks = packed_k(kc);
        for (int q = 0; q * kNR < cols; ++q) {
            Packed* panel = out + std::ptrdiff_t(q) * ks * kNR;
            for (int h = 0; h < kNR / 16; ++h) {
                const int c0 = q * kNR + h * 16;
                Packed* dst = panel + h * 16;
                if (c0 >= cols) {
                    for (int t = 0; t < ks; ++t)
                        _mm512_store_si512(dst + t * kNR, _mm512_setzero_si512());
                    continue;
                }
                const std::uint32_t* src =
                    panels + (std::ptrdiff_t((j0 + c0) / 16) * p.ldw + p0 / 2) * 16;
                for (int t = 0; t < ks; ++t) {
                    _mm512_store_si512(dst + t * kNR,
                                       _mm512_loadu_si512(src + std::ptrdiff_t(t) * 16));
                }
            }
        }
    }

    static void pack_b(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                       Packed* out) {
        if (p.w_type == WeightType::kBF16Panels) {
            pack_b_panels(p, w, j0, cols, p0, kc, out);
        } else if (p.w_type == WeightType::kBF16) {
            pack_b_impl<true>(w, p.ldw, j0, cols, p0, kc, out);
        } else {
            pack_b_impl<false>(w, p.ldw, j0, cols, p0, kc, out);
        }
    }

    // R rows of the tile (R < kMR for the last row panel of a block: no work on padding rows).
    // The 32 columns of pair kk are at b + kk * b_step (columns 0-15) and that + b_half (16-31):
    // (kNR, 16) in a packed B panel, (16, a panel's length) in load-time panels read in place.
    template <int R>
    [[gnu::always_inline]] static inline void ukernel_impl(int ks, const Packed* a, const Packed* b,
                                                           std::ptrdiff_t b_step,
                                                           std::ptrdiff_t b_half, float* c,
                                                           std::ptrdiff_t ldc, bool accumulate) {
        __m512 c0[R], c1[R];
#pragma GCC unroll 14
        for (int r = 0; r < R; ++r) {
            c0[r] = accumulate ? _mm512_load_ps(c + r * ldc) : _mm512_setzero_ps();
            c1[r] = accumulate ? _mm512_load_ps(c + r * ldc + 16) : _mm512_setzero_ps();
        }
        for (int kk = 0; kk < ks; ++kk) {
            // Unaligned loads: load-time panels need not start on a 64-byte boundary.
            const __m512bh b0 = __m512bh(_mm512_loadu_si512(b + kk * b_step));
            const __m512bh b1 = __m512bh(_mm512_loadu_si512(b + kk * b_step + b_half));
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
    template <int R>
    static void ukernel(int ks, const Packed* a, const Packed* b, float* c, std::ptrdiff_t ldc,
                        bool accumulate) {
        ukernel_impl<R>(ks, a, b, kNR, 16, c, ldc, accumulate);
    }

    // B straight from load-time panels (kernels/weight_panels.h), without pack_b's copy: the
    // panels already hold bf16 pairs in k order, 16 columns each, so a 32-column tile reads two
    // neighbouring panels. The same values in the same order as from the copy, so the same bits.
    // Returns the tile of columns [j0, j0 + kNR) x pairs from p0 / 2 on, or null when the weights
    // are not panels (j0 a multiple of 16, p0 even: task columns are multiples of 32, k blocks
    // even).
    static const Packed* panel_b(const GemmArgs& p, const void* w, int j0, int p0) {
        if (p.w_type != WeightType::kBF16Panels) return nullptr;
        return static_cast<const Packed*>(w) + (std::ptrdiff_t(j0 / 16) * p.ldw + p0 / 2) * 16;
    }
    static std::ptrdiff_t panel_b_half(const GemmArgs& p) { return p.ldw * 16; }
    template <int R>
    static void ukernel_panels(int ks, const Packed* a, const Packed* b, std::ptrdiff_t b_half,
                               float* c, std::ptrdiff_t ldc, bool accumulate) {
        ukernel_impl<R>(ks, a, b, 16, b_half, c, ldc, accumulate);
    }
};

using KernelBf16 = KernelBf16T<detail::kBlockingAvx512Bf16>;

// Small m: the same kernel with a register tile of MR rows (no zero rows packed or multiplied
// for a decode step of one sequence) and blocks sized so one pass over the weights stays in L1
// (a packed block serves only these few rows, so L2 blocking would buy nothing). Every output
// element is the same chain of operations as in KernelBf16, so rows are bit-identical to its.
template <int MR>
using KernelBf16Stream = KernelBf16T<detail::stream_blocking(MR, 32, detail::kStreamKcBf16)>;

// Small m on load-time panels (x86/gemm_panel_stream.h): KernelBf16T's chain (one vdpbf16ps per
// k pair in increasing order) read straight from the panels, which are already bf16 pairs.
struct PanelStreamBf16 : x86::RowsToPanel16, x86::EpilogueAvx512 {
    using AElem = std::uint32_t;
    static constexpr int kRows = 4, kPanels = 4;
    // Whole 16-pair stores: rows padded to a multiple of 32 k (zeros, as the packed path pads).
    static std::ptrdiff_t a_len(int k) { return (std::ptrdiff_t(k) + 31) / 32 * 16; }
    static void prepare_a(const GemmArgs& p, int row, std::uint32_t* out) {
        const float* src = p.a + std::ptrdiff_t(row) * p.lda;
        for (int kk = 0; kk < p.k; kk += 32) {
            _mm512_storeu_ps(reinterpret_cast<float*>(out + kk / 2),
                             load_f32_as_pairs(src + kk, p.k - kk));
        }
    }
    template <int R, int G>
    static void chunk(const std::uint32_t* a, std::ptrdiff_t lda, const std::uint32_t* w,
                      std::ptrdiff_t panel_stride, std::ptrdiff_t t0, std::ptrdiff_t t1,
                      bool /*odd_tail: the padded pair multiplies zeros, as in the packed path*/,
                      bool first, float* acc, std::ptrdiff_t ld_acc) {
        __m512 c[R][G];
        x86::load_acc16(c, first, acc, ld_acc);
        for (std::ptrdiff_t t = t0; t < t1; ++t) {
            detail::prefetch_panels<G>(w, panel_stride, t);
            __m512bh b[G];
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                b[g] = __m512bh(_mm512_loadu_si512(w + g * panel_stride + t * 16));
            }
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const __m512bh av = __m512bh(_mm512_set1_epi32(int(a[r * lda + t])));
#pragma GCC unroll 4
                for (int g = 0; g < G; ++g) c[r][g] = _mm512_dpbf16_ps(c[r][g], av, b[g]);
            }
        }
        x86::store_acc16(c, acc, ld_acc);
    }
    template <int R, int G>
    static void row_group(const std::uint32_t* a, std::ptrdiff_t lda, const std::uint16_t* w,
                          std::ptrdiff_t ldw, int live, int k, float* acc, std::ptrdiff_t ld_acc) {
        x86::rows_direct16<R, G>(w, ldw, live, k, detail::kStreamPrefetchPairs, acc, ld_acc,
                                 [&](__m512& sum, int r, std::ptrdiff_t t, __m512 pair) {
                                     const __m512bh av =
                                         __m512bh(_mm512_set1_epi32(int(a[r * lda + t])));
                                     sum = _mm512_dpbf16_ps(sum, av, __m512bh(pair));
                                 });
    }
};

}  // namespace
}  // namespace qvl::kernels::avx512bf16

namespace qvl::kernels {

constinit const GemmKernels avx512bf16::kGemmKernels =
    detail::tier_gemm_kernels<avx512bf16::KernelBf16, avx512bf16::PanelStreamBf16,
                              avx512bf16::KernelBf16Stream, 8, true>();

}  // namespace qvl::kernels
