// AVX2+FMA GEMM: a 6x16 register tile (12 ymm accumulators) over panels packed with plain loops
// (bf16 widened, kBF16 precision rounded); small m (decode) runs the same packing and micro-kernel
// with streaming blocks, so rows are bit-identical to the large-m path's. The fallback tier for
// machines without AVX-512.
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
#include <cstring>

#include "kernels/activation.h"
#include "kernels/gemm_internal.h"
#include "kernels/x86/gemm_driver.h"
#include "kernels/x86/gemm_panel_stream.h"
#include "kernels/x86/tier_entries.h"

namespace qvl::kernels::avx2 {
namespace {

// Local bf16 helpers (base/bf16.h's inline functions must not be compiled with ISA flags: the
// linker could keep this copy for baseline callers).
float bf16_bits_to_f32(std::uint16_t h) {
    const std::uint32_t u = std::uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

float round_to_bf16(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

float weight_at(const GemmArgs& p, const void* w, int j, int kk) {
    const std::ptrdiff_t idx = std::ptrdiff_t(j) * p.ldw + kk;
    if (p.w_type == WeightType::kBF16) {
        return bf16_bits_to_f32(static_cast<const std::uint16_t*>(w)[idx]);
    }
    const float v = static_cast<const float*>(w)[idx];
    return p.round_bf16() ? avx2::round_to_bf16(v) : v;
}

// In-place transpose of an 8x8 block of floats.
void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int g = 0; g < 2; ++g) {
        u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    for (int c = 0; c < 4; ++c) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

__m256 round_bf16(__m256 x);

// The epilogue with the AVX2 tier's vectorised activations (its kVectorKernels), row by row:
// c = act(acc + bias) + residual, or silu(acc) * acc2. The scalar reference epilogue evaluates
// each activation in double, which made GELU the slowest part of an AVX2 vision MLP.
void epilogue_rows(const GemmArgs& p, const float* acc, const float* acc2, std::ptrdiff_t ld,
                   int m0, int m1, int n0, int n1) {
    const int n = n1 - n0;
    // v = act(acc + bias) goes through a row of scratch: the residual may be c itself.
    auto* v = static_cast<float*>(
        detail::thread_scratch(detail::kScratchEpilogue, sizeof(float) * std::size_t(n)));
    for (int i = m0; i < m1; ++i) {
        const float* s = acc + std::ptrdiff_t(i - m0) * ld;
        float* c = p.c + std::ptrdiff_t(i) * p.ldc + n0;
        if (p.w_up != nullptr) {
            kVectorKernels.silu_mul_f32(s, acc2 + std::ptrdiff_t(i - m0) * ld, c, n);
            continue;
        }
        const float* in = s;
        if (p.bias != nullptr) {
            kVectorKernels.add_f32(s, p.bias + n0, v, n);
            in = v;
        }
        switch (p.act) {
            case GemmActivation::kNone:
                break;
            case GemmActivation::kGeluTanh:
                kVectorKernels.gelu_tanh_f32(in, v, n);
                in = v;
                break;
            case GemmActivation::kGeluErf:
                kVectorKernels.gelu_erf_f32(in, v, n);
                in = v;
                break;
            case GemmActivation::kSilu:  // unused by the model outside the SwiGLU pair
                detail::gemm_epilogue(p, s, nullptr, ld, i, i + 1, n0, n1);
                continue;
        }
        if (p.residual != nullptr) {
            kVectorKernels.add_f32(in, p.residual + std::ptrdiff_t(i) * p.ldr + n0, c, n);
        } else if (in != c) {
            std::memcpy(c, in, sizeof(float) * std::size_t(n));
        }
    }
}

template <GemmBlocking B>
struct KernelF32T {
    using Packed = float;
    static constexpr int kMR = B.mr, kNR = B.nr, kKC = B.kc, kMC = B.mc, kNC = B.nc;

    static int packed_k(int kc) { return kc; }

    // Full 8-wide k chunks go through 8x8 transposes; the k tail (< 8) is copied element-wise.
    // A transposed column holds the kMR rows in its first lanes and zeros after them. The
    // columns are written in increasing k with whole 8-lane stores, each one's extra lanes landing
    // on the next columns' first values, which the next stores then overwrite; a column whose 8
    // lanes would reach past the chunk is written with exactly kMR lanes. vmaskmovps, which
    // wrote exactly kMR lanes every time, is slow on AMD cores (most of the packing's time).
    static_assert(kMR == 1 || kMR == 2 || kMR == 4 || kMR == 6 || kMR == 8);
    static void store_column(float* dst, __m256 v, bool exact) {
        if (kMR == 8 || !exact) return _mm256_storeu_ps(dst, v);
        const __m128 lo = _mm256_castps256_ps128(v);
        if constexpr (kMR >= 4) _mm_storeu_ps(dst, lo);  // lanes 0-3
        if constexpr (kMR == 6) {
            _mm_storel_pi(reinterpret_cast<__m64*>(dst + 4), _mm256_extractf128_ps(v, 1));
        }
        if constexpr (kMR == 2) _mm_storel_pi(reinterpret_cast<__m64*>(dst), lo);
        if constexpr (kMR == 1) _mm_store_ss(dst, lo);
    }

    static void pack_a(const GemmArgs& p, int i0, int rows, int p0, int kc, float* out) {
        for (int q = 0; q * kMR < rows; ++q) {
            float* panel = out + std::ptrdiff_t(q) * kc * kMR;
            const int nr = std::min(kMR, rows - q * kMR);
            const float* src[kMR];
            detail::gemm_a_rows(p, i0 + q * kMR, nr, p0, kc, src);
            int kb = 0;
            for (; kb + 8 <= kc; kb += 8) {
                __m256 r[8];
                for (int i = 0; i < 8; ++i) {
                    r[i] = i < nr ? _mm256_loadu_ps(src[i] + kb) : _mm256_setzero_ps();
                    if (p.round_bf16()) r[i] = round_bf16(r[i]);
                }
                transpose8(r);
                for (int t = 0; t < 8; ++t) {
                    store_column(panel + (kb + t) * kMR, r[t], t * kMR + 8 > 8 * kMR);
                }
            }
            for (; kb < kc; ++kb) {
                for (int i = 0; i < kMR; ++i) {
                    const float v = i < nr ? src[i][kb] : 0.0f;
                    panel[kb * kMR + i] = p.round_bf16() ? avx2::round_to_bf16(v) : v;
                }
            }
        }
    }

    template <bool kBf16W>
    static __m256 load_w8(const GemmArgs& p, const void* row, int kk) {
        if constexpr (kBf16W) {
            const __m128i h = _mm_loadu_si128(
                reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(row) + kk));
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        } else {
            const __m256 v = _mm256_loadu_ps(static_cast<const float*>(row) + kk);
            return p.round_bf16() ? round_bf16(v) : v;
        }
    }

    template <bool kBf16W>
    static void pack_b_impl(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                            float* out) {
        const std::ptrdiff_t elem = kBf16W ? 2 : 4;
        for (int q = 0; q * kNR < cols; ++q) {
            float* panel = out + std::ptrdiff_t(q) * kc * kNR;
            for (int h = 0; h < kNR / 8; ++h) {
                const int c0 = q * kNR + h * 8;
                const int nrows = std::clamp(cols - c0, 0, 8);
                const auto* base = static_cast<const unsigned char*>(w) +
                                   (std::ptrdiff_t(j0 + c0) * p.ldw + p0) * elem;
                int kb = 0;
                for (; kb + 8 <= kc; kb += 8) {
                    __m256 r[8];
                    for (int i = 0; i < 8; ++i) {
                        r[i] = i < nrows ? load_w8<kBf16W>(p, base + i * p.ldw * elem, kb)
                                         : _mm256_setzero_ps();
                    }
                    transpose8(r);
                    for (int t = 0; t < 8; ++t)
                        _mm256_store_ps(panel + (kb + t) * kNR + h * 8, r[t]);
                }
                for (; kb < kc; ++kb) {
                    for (int i = 0; i < 8; ++i) {
                        panel[kb * kNR + h * 8 + i] =
                            i < nrows ? weight_at(p, w, j0 + c0 + i, p0 + kb) : 0.0f;
                    }
                }
            }
        }
    }

    // From load-time panels (kernels/weight_panels.h): kNR is one 16-output panel, its pairs
    // already in k order; one shift (even k) and one mask (odd k) widen them, no transposes.
    // j0 and p0 are multiples of 16 and 2 (task columns are multiples of 32, k blocks even).
    // Pairs ahead of the copy (3 KiB): the best of those tried (bench/README.md).
    static constexpr int kPackAhead = 48;

    static void pack_b_panels(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                              float* out) {
        static_assert(kNR == 16);
        const auto* panels = static_cast<const std::uint32_t*>(w);
        const __m256i odd_mask = _mm256_set1_epi32(int(0xffff0000u));
        for (int q = 0; q * kNR < cols; ++q) {
            float* dst = out + std::ptrdiff_t(q) * kc * kNR;
            const std::uint32_t* src =
                panels + (std::ptrdiff_t((j0 + q * kNR) / 16) * p.ldw + p0 / 2) * 16;
            // Each panel's pairs are one 64-byte line; the line kPackAhead pairs on (in this
            // panel or, near its end, the next one) is asked for now. A panel's 8 KiB are read
            // once per row pass, from DRAM or L3, and the hardware prefetchers start cold at every
            // panel: without this the copy waited on its loads for ~5 % of the product's time.
            const std::uint32_t* next = src + p.ldw * 16;
            const int pairs = (kc + 1) / 2;
            for (int kk = 0; kk < kc; kk += 2) {
                const int ahead = kk / 2 + kPackAhead;
                _mm_prefetch(reinterpret_cast<const char*>(
                                 ahead < pairs ? src + std::ptrdiff_t(ahead) * 16
                                               : next + std::ptrdiff_t(ahead - pairs) * 16),
                             _MM_HINT_T0);
                const auto* pair =
                    reinterpret_cast<const __m256i*>(src + std::ptrdiff_t(kk / 2) * 16);
                const __m256i lo = _mm256_loadu_si256(pair);
                const __m256i hi = _mm256_loadu_si256(pair + 1);
                _mm256_store_ps(dst + kk * kNR, _mm256_castsi256_ps(_mm256_slli_epi32(lo, 16)));
                _mm256_store_ps(dst + kk * kNR + 8, _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16)));
                if (kk + 1 < kc) {
                    _mm256_store_ps(dst + (kk + 1) * kNR,
                                    _mm256_castsi256_ps(_mm256_and_si256(lo, odd_mask)));
                    _mm256_store_ps(dst + (kk + 1) * kNR + 8,
                                    _mm256_castsi256_ps(_mm256_and_si256(hi, odd_mask)));
                }
            }
        }
    }

    static void pack_b(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                       float* out) {
        if (p.w_type == WeightType::kBF16Panels) {
            pack_b_panels(p, w, j0, cols, p0, kc, out);
        } else if (p.w_type == WeightType::kBF16) {
            pack_b_impl<true>(p, w, j0, cols, p0, kc, out);
        } else {
            pack_b_impl<false>(p, w, j0, cols, p0, kc, out);
        }
    }

    // R rows of the tile (R < kMR for the last row panel of a block: no work on padding rows).
    template <int R>
    static void ukernel(int ks, const float* a, const float* b, float* c, std::ptrdiff_t ldc,
                        bool accumulate) {
        __m256 c0[R], c1[R];
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            c0[r] = accumulate ? _mm256_load_ps(c + r * ldc) : _mm256_setzero_ps();
            c1[r] = accumulate ? _mm256_load_ps(c + r * ldc + 8) : _mm256_setzero_ps();
        }
        for (int kk = 0; kk < ks; ++kk) {
            const __m256 b0 = _mm256_load_ps(b + kk * kNR);
            const __m256 b1 = _mm256_load_ps(b + kk * kNR + 8);
#pragma GCC unroll 6
            for (int r = 0; r < R; ++r) {
                const __m256 av = _mm256_broadcast_ss(a + kk * kMR + r);
                c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
            }
        }
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            _mm256_store_ps(c + r * ldc, c0[r]);
            _mm256_store_ps(c + r * ldc + 8, c1[r]);
        }
    }

    static void epilogue(const GemmArgs& p, const float* acc, const float* acc2, std::ptrdiff_t ld,
                         int m0, int m1, int n0, int n1) {
        epilogue_rows(p, acc, acc2, ld, m0, m1, n0, n1);
    }
};

__m256 round_bf16(__m256 x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
    return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32(int(0xffff0000u))));
}

using KernelF32 = KernelF32T<detail::kBlockingAvx2>;

// Small m: the same kernel with a register tile of MR rows (no zero rows packed or multiplied
// for a decode step of one sequence) and blocks sized so one pass over the weights stays in L1
// (a packed block serves only these few rows, so L2 blocking would buy nothing). Every output
// element is the same chain of operations as in KernelF32, so rows are bit-identical to its.
template <int MR>
using KernelF32Stream = KernelF32T<detail::stream_blocking(MR, 16, detail::kStreamKcF32)>;

// Small m on load-time panels (x86/gemm_panel_stream.h): KernelF32T's chain (one FMA per k in
// increasing order) read straight from the panels, widened with a shift (even k) and a mask
// (odd k). Four panels per pass, as the AVX-512 tiers: a decode step is bound by the weight
// streams in flight (two panels read less: bench/README.md). One row runs one_row(), several
// rows run rows(); each order is the faster one for its case.
struct PanelStreamF32 {
    using AElem = float;
    static constexpr int kRows = 2, kPanels = 4;
    static std::ptrdiff_t a_len(int k) { return k; }
    static void prepare_a(const GemmArgs& p, int row, float* out) {
        const float* src = p.a + std::ptrdiff_t(row) * p.lda;
        for (int kk = 0; kk < p.k; ++kk) {
            out[kk] = p.round_bf16() ? avx2::round_to_bf16(src[kk]) : src[kk];
        }
    }
    template <int R, int G>
    static void chunk(const float* a, std::ptrdiff_t lda, const std::uint32_t* w,
                      std::ptrdiff_t panel_stride, std::ptrdiff_t t0, std::ptrdiff_t t1,
                      bool odd_tail, bool first, float* acc, std::ptrdiff_t ld_acc) {
        if constexpr (R == 1) {
            one_row<G>(a, w, panel_stride, t0, t1, odd_tail, first, acc);
        } else if constexpr (G > 2) {
            // Two rows of four panels would need all 16 ymm registers for sums: two at a time.
            rows<R, 2>(a, lda, w, panel_stride, t0, t1, odd_tail, first, acc, ld_acc);
            rows<R, G - 2>(a, lda, w + 2 * panel_stride, panel_stride, t0, t1, odd_tail, first,
                           acc + 2 * kPanelOutputs, ld_acc);
        } else {
            rows<R, G>(a, lda, w, panel_stride, t0, t1, odd_tail, first, acc, ld_acc);
        }
    }
    // A pass's sums: zero in a product's first chunk, else the slab's (stored and reloaded
    // between chunks, which is exact).
    template <int R, int G>
    [[gnu::always_inline]] static inline void load_sums(__m256 (&c)[R][2 * G], const float* acc,
                                                        std::ptrdiff_t ld_acc, bool first) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
            for (int h = 0; h < 2 * G; ++h) {
                c[r][h] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + r * ld_acc + h * 8);
            }
        }
    }
    template <int R, int G>
    [[gnu::always_inline]] static inline void store_sums(const __m256 (&c)[R][2 * G], float* acc,
                                                         std::ptrdiff_t ld_acc) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
            for (int h = 0; h < 2 * G; ++h) _mm256_storeu_ps(acc + r * ld_acc + h * 8, c[r][h]);
        }
    }
    // One row (a decode step): a pair's weights widened one panel at a time, each panel's FMAs
    // right after. The 2 G sums, a panel's four widened halves and the two broadcasts fit the 16
    // ymm registers. Widening all four panels first (the order before) needed 24 and kept every
    // sum on the stack: a store and a reload per FMA, which cores without renaming of stack
    // memory (Zen 1) pay in full (bench/README.md).
    template <int G>
    static void one_row(const float* a, const std::uint32_t* w, std::ptrdiff_t panel_stride,
                        std::ptrdiff_t t0, std::ptrdiff_t t1, bool odd_tail, bool first,
                        float* acc) {
        __m256 c[1][2 * G];
        load_sums<1, G>(c, acc, 0, first);
        // Whole pairs, then (odd k) the last pair's even half.
        const std::ptrdiff_t t_full = odd_tail ? t1 - 1 : t1;
        for (std::ptrdiff_t t = t0; t < t_full; ++t)
            one_row_pair<G, true>(a, w, panel_stride, t, c);
        if (odd_tail) one_row_pair<G, false>(a, w, panel_stride, t_full, c);
        store_sums<1, G>(c, acc, 0);
    }
    template <int G, bool kOdd>
    [[gnu::always_inline]] static inline void one_row_pair(const float* a, const std::uint32_t* w,
                                                           std::ptrdiff_t panel_stride,
                                                           std::ptrdiff_t t,
                                                           __m256 (&c)[1][2 * G]) {
        detail::prefetch_panels<G>(w, panel_stride, t);
        const __m256 a0 = _mm256_broadcast_ss(a + 2 * t);
        __m256 a1 = a0;
        if constexpr (kOdd) a1 = _mm256_broadcast_ss(a + 2 * t + 1);
        const __m256i odd_mask = _mm256_set1_epi32(int(0xffff0000u));
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            const std::uint32_t* wg = w + g * panel_stride + t * kPanelOutputs;
            const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg));
            const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + 8));
            c[0][2 * g] =
                _mm256_fmadd_ps(a0, _mm256_castsi256_ps(_mm256_slli_epi32(v0, 16)), c[0][2 * g]);
            c[0][2 * g + 1] = _mm256_fmadd_ps(a0, _mm256_castsi256_ps(_mm256_slli_epi32(v1, 16)),
                                              c[0][2 * g + 1]);
            if constexpr (kOdd) {
                c[0][2 * g] = _mm256_fmadd_ps(
                    a1, _mm256_castsi256_ps(_mm256_and_si256(v0, odd_mask)), c[0][2 * g]);
                c[0][2 * g + 1] = _mm256_fmadd_ps(
                    a1, _mm256_castsi256_ps(_mm256_and_si256(v1, odd_mask)), c[0][2 * g + 1]);
            }
        }
    }
    // c[r][h] += the pair t of rows x panels (only its even k without kOdd). One half-panel's
    // weights widened at a time and used by every row at once: with all of them widened first
    // (as one row once did), two rows' sums no longer fitted the 16 registers and the compiler
    // kept some on the stack.
    template <int R, int G, bool kOdd>
    [[gnu::always_inline]] static inline void pair(const float* a, std::ptrdiff_t lda,
                                                   const std::uint32_t* w,
                                                   std::ptrdiff_t panel_stride, std::ptrdiff_t t,
                                                   __m256 (&c)[R][2 * G]) {
        detail::prefetch_panels<G>(w, panel_stride, t);
        __m256 a0[R], a1[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            a0[r] = _mm256_broadcast_ss(a + r * lda + 2 * t);
            if constexpr (kOdd) a1[r] = _mm256_broadcast_ss(a + r * lda + 2 * t + 1);
        }
#pragma GCC unroll 8
        for (int h = 0; h < 2 * G; ++h) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                w + (h / 2) * panel_stride + t * 16 + (h % 2) * 8));
            const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) c[r][h] = _mm256_fmadd_ps(a0[r], even, c[r][h]);
            if constexpr (kOdd) {
                const __m256 odd =
                    _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(int(0xffff0000u))));
#pragma GCC unroll 4
                for (int r = 0; r < R; ++r) c[r][h] = _mm256_fmadd_ps(a1[r], odd, c[r][h]);
            }
        }
    }
    // Several rows (a decode step of several sequences, a short prefill chunk).
    template <int R, int G>
    static void rows(const float* a, std::ptrdiff_t lda, const std::uint32_t* w,
                     std::ptrdiff_t panel_stride, std::ptrdiff_t t0, std::ptrdiff_t t1,
                     bool odd_tail, bool first, float* acc, std::ptrdiff_t ld_acc) {
        __m256 c[R][2 * G];
        load_sums<R, G>(c, acc, ld_acc, first);
        // Whole pairs, then (odd k) the last pair's even half.
        const std::ptrdiff_t t_full = odd_tail ? t1 - 1 : t1;
        for (std::ptrdiff_t t = t0; t < t_full; ++t) {
            pair<R, G, true>(a, lda, w, panel_stride, t, c);
        }
        if (odd_tail) pair<R, G, false>(a, lda, w, panel_stride, t_full, c);
        store_sums<R, G>(c, acc, ld_acc);
    }
    static void epilogue(const GemmArgs& p, const float* acc, const float* acc2, std::ptrdiff_t ld,
                         int m0, int m1, int n0, int n1) {
        epilogue_rows(p, acc, acc2, ld, m0, m1, n0, n1);
    }
    // Whole blocks of 8 pairs as two 8x8 transposes (rows 0-7, 8-15) of 32-byte loads; a block
    // with a missing row or past k word by word.
    static void rows_to_panel(const std::uint16_t* w, std::ptrdiff_t ldw, int live, int k,
                              std::ptrdiff_t t0, std::ptrdiff_t t1, std::ptrdiff_t ahead,
                              std::uint32_t* out) {
        for (std::ptrdiff_t tb = t0; tb < t1; tb += 8) {
            const std::uint16_t* src = w + 2 * tb;
            std::uint32_t* dst = out + (tb - t0) * kPanelOutputs;
            if (tb % 16 == 0) {  // a 64-byte line of each row per 16 pairs
                for (int i = 0; i < live; ++i) {
                    _mm_prefetch(reinterpret_cast<const char*>(src + i * ldw) + 2 * ahead,
                                 _MM_HINT_T1);
                }
            }
            if (live == kPanelOutputs && tb + 8 <= t1 && 2 * (tb + 8) <= k) {
                for (int h = 0; h < 2; ++h) {
                    __m256 r[8];
                    for (int i = 0; i < 8; ++i) {
                        r[i] = _mm256_loadu_ps(
                            reinterpret_cast<const float*>(src + std::ptrdiff_t(8 * h + i) * ldw));
                    }
                    transpose8(r);
                    for (int t = 0; t < 8; ++t) {
                        _mm256_store_ps(reinterpret_cast<float*>(dst + t * kPanelOutputs + 8 * h),
                                        r[t]);
                    }
                }
                continue;
            }
            for (std::ptrdiff_t t = tb; t < std::min(t1, tb + 8); ++t) {
                for (int c = 0; c < kPanelOutputs; ++c) {
                    const std::uint16_t* e = w + std::ptrdiff_t(c) * ldw + 2 * t;
                    const std::uint32_t lo = c < live ? e[0] : 0u;
                    const std::uint32_t hi = c < live && 2 * t + 1 < k ? e[1] : 0u;
                    out[(t - t0) * kPanelOutputs + c] = lo | hi << 16;
                }
            }
        }
    }
};

}  // namespace
}  // namespace qvl::kernels::avx2

namespace qvl::kernels {

constinit const GemmKernels avx2::kGemmKernels =
    detail::tier_gemm_kernels<avx2::KernelF32, avx2::PanelStreamF32, avx2::KernelF32Stream, 6,
                              false>();

namespace detail {

void gemm_epilogue_avx2(const GemmArgs& p, const float* acc, const float* acc2,
                        std::ptrdiff_t ld_acc, int m0, int m1, int n0, int n1) {
    avx2::epilogue_rows(p, acc, acc2, ld_acc, m0, m1, n0, n1);
}

}  // namespace detail

}  // namespace qvl::kernels
