// AVX-512 helpers for the GEMM packing and GEMV: masked loads that never touch memory past the
// end of a row, bf16 widening and rounding, and a 16x16 32-bit transpose. Every function is
// `static inline` (internal linkage per translation unit), so the copies compiled with different
// ISA flags never meet in the linker. Included only from *_avx512*.cpp files.
#pragma once

#include <immintrin.h>

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

}  // namespace qvl::kernels::x86
