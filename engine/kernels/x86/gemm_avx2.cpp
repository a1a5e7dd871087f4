// AVX2+FMA GEMM and GEMV: a 6x16 register tile (12 ymm accumulators) over panels packed with
// plain loops (bf16 widened, kBF16 precision rounded), and a GEMV streaming weight rows four at
// a time. The fallback tier for machines without AVX-512.
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

struct KernelF32 {
    using Packed = float;
    static constexpr int kMR = detail::kBlockingAvx2.mr, kNR = detail::kBlockingAvx2.nr,
                         kKC = detail::kBlockingAvx2.kc, kMC = detail::kBlockingAvx2.mc,
                         kNC = detail::kBlockingAvx2.nc;

    static int packed_k(int kc) { return kc; }

    // Full 8-wide k chunks go through 8x8 transposes; the k tail (< 8) is copied element-wise.
    static void pack_a(const GemmArgs& p, int i0, int rows, int p0, int kc, float* out) {
        const __m256i store6 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
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
                for (int t = 0; t < 8; ++t)
                    _mm256_maskstore_ps(panel + (kb + t) * kMR, store6, r[t]);
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

    static void pack_b(const GemmArgs& p, const void* w, int j0, int cols, int p0, int kc,
                       float* out) {
        if (p.w_type == WeightType::kBF16) {
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

// 8 weights from k offset kk of a row (n valid; a short tail goes through a zeroed copy so
// nothing past the row is read).
template <bool kBf16W, bool kRound>
__m256 load_w(const void* row, int kk, int n) {
    if constexpr (kBf16W) {
        const auto* r = static_cast<const std::uint16_t*>(row) + kk;
        __m128i h;
        if (n >= 8) {
            h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r));
        } else {
            std::uint16_t tmp[8] = {};
            std::memcpy(tmp, r, sizeof(std::uint16_t) * n);
            h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tmp));
        }
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    } else {
        const float* r = static_cast<const float*>(row) + kk;
        __m256 v;
        if (n >= 8) {
            v = _mm256_loadu_ps(r);
        } else {
            float tmp[8] = {};
            std::memcpy(tmp, r, sizeof(float) * n);
            v = _mm256_loadu_ps(tmp);
        }
        return kRound ? round_bf16(v) : v;
    }
}

__m256 load_a(const float* r, int n) {
    if (n >= 8) return _mm256_loadu_ps(r);
    float tmp[8] = {};
    std::memcpy(tmp, r, sizeof(float) * n);
    return _mm256_loadu_ps(tmp);
}

float hsum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

template <int M, int R, bool kBf16W, bool kRound>
void gemv_block(const float* a, std::ptrdiff_t lda, const unsigned char* w,
                std::ptrdiff_t ldw_bytes, int k, float* out, std::ptrdiff_t ldo) {
    __m256 acc[M][R];
    for (int i = 0; i < M; ++i) {
        for (int r = 0; r < R; ++r) acc[i][r] = _mm256_setzero_ps();
    }
    for (int kk = 0; kk < k; kk += 8) {
        const int n = std::min(8, k - kk);
        __m256 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = load_w<kBf16W, kRound>(w + r * ldw_bytes, kk, n);
        for (int i = 0; i < M; ++i) {
            const __m256 av = load_a(a + i * lda + kk, n);
            for (int r = 0; r < R; ++r) acc[i][r] = _mm256_fmadd_ps(av, wv[r], acc[i][r]);
        }
    }
    for (int i = 0; i < M; ++i) {
        for (int r = 0; r < R; ++r) out[i * ldo + r] = hsum(acc[i][r]);
    }
}

template <int R, bool kBf16W, bool kRound>
void gemv_rows(int m, const float* a, std::ptrdiff_t lda, const unsigned char* w,
               std::ptrdiff_t ldw_bytes, int k, float* out, std::ptrdiff_t ldo) {
    for (int i0 = 0; i0 < m; i0 += 2) {
        if (m - i0 >= 2) {
            gemv_block<2, R, kBf16W, kRound>(a + i0 * lda, lda, w, ldw_bytes, k, out + i0 * ldo,
                                             ldo);
        } else {
            gemv_block<1, R, kBf16W, kRound>(a + i0 * lda, lda, w, ldw_bytes, k, out + i0 * ldo,
                                             ldo);
        }
    }
}

template <bool kBf16W, bool kRound>
void gemv_matrix(const GemmArgs& p, int m, const float* a, std::ptrdiff_t lda, const void* w,
                 int n0, int n1, float* out, std::ptrdiff_t ldo) {
    const std::ptrdiff_t ldw_bytes = p.ldw * (kBf16W ? 2 : 4);
    const auto* base = static_cast<const unsigned char*>(w);
    int j = n0;
    for (; j + 4 <= n1; j += 4) {
        gemv_rows<4, kBf16W, kRound>(m, a, lda, base + j * ldw_bytes, ldw_bytes, p.k,
                                     out + (j - n0), ldo);
    }
    for (; j < n1; ++j) {
        gemv_rows<1, kBf16W, kRound>(m, a, lda, base + j * ldw_bytes, ldw_bytes, p.k,
                                     out + (j - n0), ldo);
    }
}

void gemv_any(const GemmArgs& p, int m, const float* a, std::ptrdiff_t lda, const void* w, int n0,
              int n1, float* out, std::ptrdiff_t ldo) {
    if (p.w_type == WeightType::kBF16) {
        gemv_matrix<true, false>(p, m, a, lda, w, n0, n1, out, ldo);
    } else if (p.round_bf16()) {
        gemv_matrix<false, true>(p, m, a, lda, w, n0, n1, out, ldo);
    } else {
        gemv_matrix<false, false>(p, m, a, lda, w, n0, n1, out, ldo);
    }
}

}  // namespace
}  // namespace qvl::kernels::avx2

namespace qvl::kernels::detail {

void gemm_tile_avx2(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    gemm_tile_blocked<avx2::KernelF32>(p, m0, m1, n0, n1);
}

void gemv_tile_avx2(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    const int m = m1 - m0;
    const float* a = p.a + std::ptrdiff_t(m0) * p.lda;
    std::ptrdiff_t lda = p.lda;
    if (p.round_bf16()) {
        auto* rounded = static_cast<float*>(
            thread_scratch(kScratchA, sizeof(float) * std::size_t(m) * std::size_t(p.k)));
        for (int i = 0; i < m; ++i) {
            for (int kk = 0; kk < p.k; ++kk) {
                rounded[std::ptrdiff_t(i) * p.k + kk] =
                    avx2::round_to_bf16(a[std::ptrdiff_t(i) * p.lda + kk]);
            }
        }
        a = rounded;
        lda = p.k;
    }
    const std::ptrdiff_t ldo = n1 - n0;
    auto* out =
        static_cast<float*>(thread_scratch(kScratchC, sizeof(float) * std::size_t(m) * ldo));
    avx2::gemv_any(p, m, a, lda, p.w, n0, n1, out, ldo);
    float* out2 = nullptr;
    if (p.w_up != nullptr) {
        out2 =
            static_cast<float*>(thread_scratch(kScratchC2, sizeof(float) * std::size_t(m) * ldo));
        avx2::gemv_any(p, m, a, lda, p.w_up, n0, n1, out2, ldo);
    }
    avx2::epilogue_rows(p, out, out2, ldo, m0, m1, n0, n1);
}

}  // namespace qvl::kernels::detail
