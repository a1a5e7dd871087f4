// AVX-512 GEMV for m = 1..8: weight rows stream straight from memory (the mapped checkpoint),
// four rows at a time against up to four activation rows, f32 FMA sums over 16 lanes reduced
// at the end. Each output's order of operations depends only on k, never on the column split.
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

#include "kernels/gemm_internal.h"
#include "kernels/x86/avx512_util.h"

namespace qvl::kernels::avx512 {
namespace {

template <bool kBf16W, bool kRound>
__m512 load_w(const void* row, int kk, int n) {
    if constexpr (kBf16W) {
        const auto* r = static_cast<const std::uint16_t*>(row) + kk;
        return n >= 16 ? x86::load_bf16x16(r) : x86::load_bf16x16(r, n);
    } else {
        const float* r = static_cast<const float*>(row) + kk;
        const __m512 v = n >= 16 ? _mm512_loadu_ps(r) : _mm512_maskz_loadu_ps(x86::lanes16(n), r);
        return kRound ? x86::round_bf16(v) : v;
    }
}

// One k step of 16 (n valid) for M activation rows x R weight rows.
template <int M, int R, bool kBf16W, bool kRound>
[[gnu::always_inline]] inline void gemv_step(const float* a, std::ptrdiff_t lda,
                                             const void* const* rows, int kk, int n,
                                             __m512 (&acc)[M][R]) {
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load_w<kBf16W, kRound>(rows[r], kk, n);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
        const float* ai = a + i * lda + kk;
        const __m512 av =
            n >= 16 ? _mm512_loadu_ps(ai) : _mm512_maskz_loadu_ps(x86::lanes16(n), ai);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_fmadd_ps(av, wv[r], acc[i][r]);
    }
}

// Two k steps of 16 for bf16 weights from one 64-byte load per row (whole cache lines keep more
// of the stream in flight than half-line loads; measured ~15 % closer to the DRAM limit). Same
// accumulation order as two gemv_step calls.
template <int M, int R>
[[gnu::always_inline]] inline void gemv_step32_bf16(const float* a, std::ptrdiff_t lda,
                                                    const void* const* rows, int kk,
                                                    __m512 (&acc)[M][R]) {
    __m512 lo[R], hi[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        const __m512i x = _mm512_loadu_si512(static_cast<const std::uint16_t*>(rows[r]) + kk);
        lo[r] = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(x)), 16));
        hi[r] = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(x, 1)), 16));
    }
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
        const __m512 a0 = _mm512_loadu_ps(a + i * lda + kk);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_fmadd_ps(a0, lo[r], acc[i][r]);
        const __m512 a1 = _mm512_loadu_ps(a + i * lda + kk + 16);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_fmadd_ps(a1, hi[r], acc[i][r]);
    }
}

// out[i * ldo + r] = dot(a row i, weight row j + r) for i < M, r < R.
template <int M, int R, bool kBf16W, bool kRound>
void gemv_block(const float* a, std::ptrdiff_t lda, const void* w, std::ptrdiff_t ldw_bytes, int j,
                int k, float* out, std::ptrdiff_t ldo) {
    const auto* base = static_cast<const unsigned char*>(w) + std::ptrdiff_t(j) * ldw_bytes;
    const void* rows[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) rows[r] = base + r * ldw_bytes;
    __m512 acc[M][R];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_setzero_ps();
    }
    int kk = 0;
    for (; kk + 32 <= k; kk += 32) {
        if constexpr (kBf16W) {
            gemv_step32_bf16<M, R>(a, lda, rows, kk, acc);
        } else {
            gemv_step<M, R, kBf16W, kRound>(a, lda, rows, kk, 16, acc);
            gemv_step<M, R, kBf16W, kRound>(a, lda, rows, kk + 16, 16, acc);
        }
    }
    for (; kk + 16 <= k; kk += 16) gemv_step<M, R, kBf16W, kRound>(a, lda, rows, kk, 16, acc);
    if (kk < k) gemv_step<M, R, kBf16W, kRound>(a, lda, rows, kk, k - kk, acc);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) out[i * ldo + r] = _mm512_reduce_add_ps(acc[i][r]);
    }
}

template <int R, bool kBf16W, bool kRound>
void gemv_rows(int m, const float* a, std::ptrdiff_t lda, const void* w, std::ptrdiff_t ldw_bytes,
               int j, int k, float* out, std::ptrdiff_t ldo) {
    for (int i0 = 0; i0 < m; i0 += 4) {
        const float* ai = a + i0 * lda;
        float* o = out + i0 * ldo;
        switch (std::min(4, m - i0)) {
            case 1:
                gemv_block<1, R, kBf16W, kRound>(ai, lda, w, ldw_bytes, j, k, o, ldo);
                break;
            case 2:
                gemv_block<2, R, kBf16W, kRound>(ai, lda, w, ldw_bytes, j, k, o, ldo);
                break;
            case 3:
                gemv_block<3, R, kBf16W, kRound>(ai, lda, w, ldw_bytes, j, k, o, ldo);
                break;
            default:
                gemv_block<4, R, kBf16W, kRound>(ai, lda, w, ldw_bytes, j, k, o, ldo);
                break;
        }
    }
}

template <bool kBf16W, bool kRound>
void gemv_matrix(int m, const float* a, std::ptrdiff_t lda, const void* w, std::ptrdiff_t ldw,
                 int n0, int n1, int k, float* out, std::ptrdiff_t ldo) {
    const std::ptrdiff_t ldw_bytes = ldw * (kBf16W ? 2 : 4);
    int j = n0;
    for (; j + 4 <= n1; j += 4) {
        gemv_rows<4, kBf16W, kRound>(m, a, lda, w, ldw_bytes, j, k, out + (j - n0), ldo);
    }
    for (; j < n1; ++j) {
        gemv_rows<1, kBf16W, kRound>(m, a, lda, w, ldw_bytes, j, k, out + (j - n0), ldo);
    }
}

void gemv_any(const GemmArgs& p, const float* a, std::ptrdiff_t lda, const void* w, int n0, int n1,
              float* out, std::ptrdiff_t ldo) {
    const int m = p.m;
    if (p.w_type == WeightType::kBF16) {
        gemv_matrix<true, false>(m, a, lda, w, p.ldw, n0, n1, p.k, out, ldo);
    } else if (p.round_bf16()) {
        gemv_matrix<false, true>(m, a, lda, w, p.ldw, n0, n1, p.k, out, ldo);
    } else {
        gemv_matrix<false, false>(m, a, lda, w, p.ldw, n0, n1, p.k, out, ldo);
    }
}

}  // namespace
}  // namespace qvl::kernels::avx512

namespace qvl::kernels::detail {

void gemv_tile_avx512(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    // The task covers all m rows (GEMV tasks split columns only); m0/m1 select them anyway.
    const int m = m1 - m0;
    const float* a = p.a + std::ptrdiff_t(m0) * p.lda;
    std::ptrdiff_t lda = p.lda;
    if (p.round_bf16()) {
        auto* rounded = static_cast<float*>(
            thread_scratch(kScratchA, sizeof(float) * std::size_t(m) * std::size_t(p.k)));
        for (int i = 0; i < m; ++i) {
            const float* src = a + std::ptrdiff_t(i) * p.lda;
            float* dst = rounded + std::ptrdiff_t(i) * p.k;
            int kk = 0;
            for (; kk < p.k; kk += 16) {
                const __mmask16 mask = x86::lanes16(p.k - kk);
                _mm512_mask_storeu_ps(dst + kk, mask,
                                      x86::round_bf16(_mm512_maskz_loadu_ps(mask, src + kk)));
            }
        }
        a = rounded;
        lda = p.k;
    }
    GemmArgs sub = p;
    sub.m = m;
    const std::ptrdiff_t ldo = n1 - n0;
    auto* out =
        static_cast<float*>(thread_scratch(kScratchC, sizeof(float) * std::size_t(m) * ldo));
    avx512::gemv_any(sub, a, lda, p.w, n0, n1, out, ldo);
    float* out2 = nullptr;
    if (p.w_up != nullptr) {
        out2 =
            static_cast<float*>(thread_scratch(kScratchC2, sizeof(float) * std::size_t(m) * ldo));
        avx512::gemv_any(sub, a, lda, p.w_up, n0, n1, out2, ldo);
    }
    gemm_epilogue_avx512(p, out, out2, ldo, m0, m1, n0, n1);
}

}  // namespace qvl::kernels::detail
