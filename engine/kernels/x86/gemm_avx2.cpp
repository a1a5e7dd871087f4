// AVX2+FMA GEMM and GEMV: a 6x16 register tile (12 ymm accumulators) over panels packed with
// plain loops (bf16 widened, kBF16 precision rounded), and a GEMV streaming weight rows four at
// a time. The fallback tier for machines without AVX-512.
// GCC 12's AVX-512 intrinsic headers build _mm512_undefined_*() from a self-initialised variable,
// which -W(maybe-)uninitialized reports once inlined here; the value is never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/gemm_internal.h"
#include "kernels/x86/gemm_driver.h"

namespace qvl::kernels::avx2 {
namespace {

using detail::GemmProblem;

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

float weight_at(const GemmProblem& p, const void* w, int j, int kk) {
    const std::ptrdiff_t idx = std::ptrdiff_t(j) * p.ldw + kk;
    if (p.w_type == WeightType::kBF16) {
        return bf16_bits_to_f32(static_cast<const std::uint16_t*>(w)[idx]);
    }
    const float v = static_cast<const float*>(w)[idx];
    return p.round_bf16 ? avx2::round_to_bf16(v) : v;
}

struct KernelF32 {
    using Packed = float;
    static constexpr int kMR = 6, kNR = 16, kKC = 256, kMC = 120, kNC = 512;

    static int packed_k(int kc) { return kc; }

    static void pack_a(const GemmProblem& p, int i0, int rows, int p0, int kc, float* out) {
        for (int q = 0; q * kMR < rows; ++q) {
            float* panel = out + std::ptrdiff_t(q) * kc * kMR;
            for (int r = 0; r < kMR; ++r) {
                const int i = q * kMR + r;
                if (i >= rows) {
                    for (int kk = 0; kk < kc; ++kk) panel[kk * kMR + r] = 0.0f;
                    continue;
                }
                const float* src = p.a + std::ptrdiff_t(i0 + i) * p.lda + p0;
                for (int kk = 0; kk < kc; ++kk) {
                    panel[kk * kMR + r] = p.round_bf16 ? avx2::round_to_bf16(src[kk]) : src[kk];
                }
            }
        }
    }

    static void pack_b(const GemmProblem& p, const void* w, int j0, int cols, int p0, int kc,
                       float* out) {
        for (int q = 0; q * kNR < cols; ++q) {
            float* panel = out + std::ptrdiff_t(q) * kc * kNR;
            for (int c = 0; c < kNR; ++c) {
                const int j = q * kNR + c;
                for (int kk = 0; kk < kc; ++kk) {
                    panel[kk * kNR + c] = j < cols ? weight_at(p, w, j0 + j, p0 + kk) : 0.0f;
                }
            }
        }
    }

    static void ukernel(int ks, const float* a, const float* b, float* c, std::ptrdiff_t ldc,
                        bool accumulate) {
        __m256 c0[kMR], c1[kMR];
#pragma GCC unroll 6
        for (int r = 0; r < kMR; ++r) {
            c0[r] = accumulate ? _mm256_load_ps(c + r * ldc) : _mm256_setzero_ps();
            c1[r] = accumulate ? _mm256_load_ps(c + r * ldc + 8) : _mm256_setzero_ps();
        }
        for (int kk = 0; kk < ks; ++kk) {
            const __m256 b0 = _mm256_load_ps(b + kk * kNR);
            const __m256 b1 = _mm256_load_ps(b + kk * kNR + 8);
#pragma GCC unroll 6
            for (int r = 0; r < kMR; ++r) {
                const __m256 av = _mm256_broadcast_ss(a + kk * kMR + r);
                c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
            }
        }
#pragma GCC unroll 6
        for (int r = 0; r < kMR; ++r) {
            _mm256_store_ps(c + r * ldc, c0[r]);
            _mm256_store_ps(c + r * ldc + 8, c1[r]);
        }
    }

    static void epilogue(const GemmProblem& p, const float* acc, const float* acc2,
                         std::ptrdiff_t ld, int m0, int m1, int n0, int n1) {
        detail::gemm_epilogue(p, acc, acc2, ld, m0, m1, n0, n1);
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
void gemv_matrix(const GemmProblem& p, int m, const float* a, std::ptrdiff_t lda, const void* w,
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

void gemv_any(const GemmProblem& p, int m, const float* a, std::ptrdiff_t lda, const void* w,
              int n0, int n1, float* out, std::ptrdiff_t ldo) {
    if (p.w_type == WeightType::kBF16) {
        gemv_matrix<true, false>(p, m, a, lda, w, n0, n1, out, ldo);
    } else if (p.round_bf16) {
        gemv_matrix<false, true>(p, m, a, lda, w, n0, n1, out, ldo);
    } else {
        gemv_matrix<false, false>(p, m, a, lda, w, n0, n1, out, ldo);
    }
}

}  // namespace
}  // namespace qvl::kernels::avx2

namespace qvl::kernels::detail {

void gemm_tile_avx2(const GemmProblem& p, int m0, int m1, int n0, int n1) {
    gemm_tile_blocked<avx2::KernelF32>(p, m0, m1, n0, n1);
}

void gemv_tile_avx2(const GemmProblem& p, int m0, int m1, int n0, int n1) {
    const int m = m1 - m0;
    const float* a = p.a + std::ptrdiff_t(m0) * p.lda;
    std::ptrdiff_t lda = p.lda;
    if (p.round_bf16) {
        auto* rounded = static_cast<float*>(
            gemm_scratch(kScratchA, sizeof(float) * std::size_t(m) * std::size_t(p.k)));
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
    auto* out = static_cast<float*>(gemm_scratch(kScratchC, sizeof(float) * std::size_t(m) * ldo));
    avx2::gemv_any(p, m, a, lda, p.w, n0, n1, out, ldo);
    float* out2 = nullptr;
    if (p.w2 != nullptr) {
        out2 = static_cast<float*>(gemm_scratch(kScratchC2, sizeof(float) * std::size_t(m) * ldo));
        avx2::gemv_any(p, m, a, lda, p.w2, n0, n1, out2, ldo);
    }
    gemm_epilogue(p, out, out2, ldo, m0, m1, n0, n1);
}

}  // namespace qvl::kernels::detail
