// AVX-512 helpers for the GEMM packing and GEMV: masked loads that never touch memory past the
// end of a row, bf16 widening and rounding, a 16x16 32-bit transpose, and bf16 rows made into a
// weight panel. Every function is
// `static inline` (internal linkage per translation unit), so the copies compiled with different
// ISA flags never meet in the linker. Included only from *_avx512*.cpp files.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace qvl::kernels::x86 {

// Mask of the first n (0..16) lanes.
static inline __mmask16 lanes16(int n) {
    return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u);
}
static inline __mmask32 lanes32(int n) {
    return n >= 32 ? __mmask32(0xffffffffu) : __mmask32((1u << n) - 1u);
}

// 16 bf16 values (n valid, rest zero) widened to f32.
static inline __m512 load_bf16x16(const std::uint16_t* p, int n) {
    const __m256i h = _mm256_maskz_loadu_epi16(lanes16(n), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 load_bf16x16(const std::uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Rounds each lane to the nearest bf16 value (ties to even), kept as f32. Matches
// base::round_to_bf16 for finite values.
static inline __m512 round_bf16(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(int(0xffff0000u))));
}

// In-place transpose of a 16x16 block of 32-bit lanes: r[i][j] -> r[j][i].
static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    __m512 u[16];
    for (int i = 0; i < 4; ++i) {
        const __m512d t0 = _mm512_castps_pd(t[4 * i]), t1 = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d t2 = _mm512_castps_pd(t[4 * i + 2]), t3 = _mm512_castps_pd(t[4 * i + 3]);
        u[4 * i + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    // u[4g + j], 128-bit lane L, holds column 4L + j of rows 4g..4g+3.
    for (int j = 0; j < 4; ++j) {
        const __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x44);
        const __m512 v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xee);
        const __m512 w0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x44);
        const __m512 w1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xee);
        r[j] = _mm512_shuffle_f32x4(v0, w0, 0x88);
        r[4 + j] = _mm512_shuffle_f32x4(v0, w0, 0xdd);
        r[8 + j] = _mm512_shuffle_f32x4(v1, w1, 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(v1, w1, 0xdd);
    }
}

// Pairs [tb, tb + n) (n <= 16) of 16 bf16 rows (w, row stride ldw; rows from `live` on, pairs
// from n on and k from `k` on zero, so an odd k's last pair has a zero high half, as in the
// load-time panels) into r, one register per pair: r[t] lane c = pair tb + t of row c, as in a
// panel (kernels/weight_panels.h). One load of up to 64 bytes per row and a 16x16 transpose;
// each row's line is also prefetched into L2 `ahead` elements further on (a prefetch never
// faults).
[[gnu::always_inline]] static inline void load_pairs16(const std::uint16_t* w, std::ptrdiff_t ldw,
                                                       int live, int k, std::ptrdiff_t tb,
                                                       std::ptrdiff_t n, std::ptrdiff_t ahead,
                                                       __m512 r[16]) {
    const std::ptrdiff_t left = std::min(std::ptrdiff_t(k) - 2 * tb, 2 * n);
    const __mmask32 mask = lanes32(int(left));
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
        const std::uint16_t* src = w + std::ptrdiff_t(i) * ldw + 2 * tb;
        if (i < live) {
            _mm_prefetch(reinterpret_cast<const char*>(src) + 2 * ahead, _MM_HINT_T1);
            r[i] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, src));
        } else {
            r[i] = _mm512_setzero_ps();
        }
    }
    transpose16(r);
}

// The R x G accumulators of a panel-stream pass stored as rows: c[r][g] at acc + r·ld_acc + 16·g.
template <int R, int G>
[[gnu::always_inline]] static inline void store_acc16(const __m512 (&c)[R][G], float* acc,
                                                      std::ptrdiff_t ld_acc) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) _mm512_storeu_ps(acc + r * ld_acc + g * 16, c[r][g]);
    }
}

// Pairs [t0, t1) of 16 bf16 rows as one panel: out[(t - t0) * 16 + c] = pair t of row c (t0 a
// multiple of 16, out 64-byte aligned); load_pairs16 per 16 pairs. The rows_to_panel of both
// AVX-512 tiers' panel-stream traits (x86/gemm_panel_stream.h has the contract): they derive
// from this. In an anonymous namespace, so that each tier's translation unit keeps its own copy
// of the member function (a class's inline members are otherwise shared at link time).
namespace {
struct RowsToPanel16 {
    static void rows_to_panel(const std::uint16_t* w, std::ptrdiff_t ldw, int live, int k,
                              std::ptrdiff_t t0, std::ptrdiff_t t1, std::ptrdiff_t ahead,
                              std::uint32_t* out) {
        for (std::ptrdiff_t tb = t0; tb < t1; tb += 16) {
            __m512 r[16];
            const std::ptrdiff_t n = t1 - tb < 16 ? t1 - tb : 16;
            load_pairs16(w, ldw, live, k, tb, n, ahead, r);
            float* dst = reinterpret_cast<float*>(out + (tb - t0) * 16);
            for (int t = 0; t < n; ++t) _mm512_store_ps(dst + t * 16, r[t]);
        }
    }
};
}  // namespace

// The chains of R activation rows over G panels' worth of bf16 rows (16 G rows from w) for all
// of k, with no panel in memory: per 16 pairs and panel, load_pairs16, then step(c[r][g], r, t,
// pair) for each row r and pair t in increasing order (the tier's chain: one vdpbf16ps, or two
// FMAs), the sums starting at zero and stored to acc at the end (store_acc16). Lines are prefetched
// prefetch_pairs ahead along the rows, running on into the next G panels' rows (w + 16 G ldw) near
// the end of k. When every row starts at the same offset in its cache line (row stride a multiple
// of 64 bytes) and on a pair, the first block is cut short so that the others are whole lines: a
// safetensors file places a tensor at any offset (the 2B lm_head at 24 bytes past a line), and a
// load across two lines reads both, the second often evicted (the other rows' lines, 4 KiB apart,
// share its L1 set) before the next block needs it (the product took about twice as long as
// from panels).
template <int R, int G, class Step>
[[gnu::always_inline]] static inline void rows_direct16(const std::uint16_t* w, std::ptrdiff_t ldw,
                                                        int live, int k,
                                                        std::ptrdiff_t prefetch_pairs, float* acc,
                                                        std::ptrdiff_t ld_acc, Step step) {
    __m512 c[R][G];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) c[r][g] = _mm512_setzero_ps();
    }
    const std::ptrdiff_t pairs = (std::ptrdiff_t(k) + 1) / 2;
    const auto at = reinterpret_cast<std::uintptr_t>(w);
    const std::ptrdiff_t head =
        ldw % 32 == 0 && at % 4 == 0 ? std::ptrdiff_t((64 - at % 64) % 64 / 4) : 0;
    std::ptrdiff_t n = 0;
    for (std::ptrdiff_t tb = 0; tb < pairs; tb += n) {
        n = std::min(pairs - tb, tb == 0 && head > 0 ? head : std::ptrdiff_t(16));
        const std::ptrdiff_t to = tb + prefetch_pairs;
        const std::ptrdiff_t ahead =
            to < pairs ? 2 * prefetch_pairs : std::ptrdiff_t(16 * G) * ldw + 2 * (to - pairs - tb);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            __m512 r[16];
            load_pairs16(w + std::ptrdiff_t(16 * g) * ldw, ldw, live - 16 * g, k, tb, n, ahead, r);
            if (n == 16) {
#pragma GCC unroll 16
                for (int t = 0; t < 16; ++t) {
#pragma GCC unroll 4
                    for (int row = 0; row < R; ++row) step(c[row][g], row, tb + t, r[t]);
                }
            } else {
                for (int t = 0; t < n; ++t) {
#pragma GCC unroll 4
                    for (int row = 0; row < R; ++row) step(c[row][g], row, tb + t, r[t]);
                }
            }
        }
    }
    store_acc16(c, acc, ld_acc);
}

}  // namespace qvl::kernels::x86
