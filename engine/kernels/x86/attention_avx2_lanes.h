// What the AVX2 attention kernel's tiles (x86/attention_avx2.cpp) and its decode path
// (x86/attention_decode_avx2.cpp) compute alike: the exp2 polynomial, K/V widening, the lane
// order of incremental rows and the fixed reduction of a key's lanes. Both files must take
// these from here for a decoded row to equal the same row of a prefill bit for bit.
// Included only by *_avx2.cpp files; everything is in an anonymous namespace, so each keeps its
// own copy (style.md B.5).
#pragma once

#include <immintrin.h>

#include <bit>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/attention_plan.h"

namespace qvl::kernels::avx2 {

// The decode path of one task (x86/attention_decode_avx2.cpp): every row of the task is one
// query row of incremental attention.
void decode_attention_task(const AttentionArgs& a, const AttentionTask& t);

namespace {

constexpr int kKeys = 64;  // keys per block
constexpr int kMaxHd = 256;
constexpr float kLog2e = 1.4426950408889634f;

// 2^x for x <= 0 (scores minus their running max): 2^n by the exponent bits, 2^f (|f| <= 1/2)
// by a degree-6 polynomial (relative error ~1e-7) with constant term exactly 1, so a block
// that leaves the max unchanged rescales by exactly 1. Below -126 the result is clamped to
// 2^-126 * 2^f; callers zero masked lanes themselves.
inline __m256 exp2_ps(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-126.0f));
    const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(x, n);
    __m256 p = _mm256_set1_ps(1.5345591236837208e-04f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3399904128164053e-03f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.618490003049374e-03f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.550329014658928e-02f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022646248340607e-01f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.931471824645996e-01f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 r = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    // Opaque to the optimiser: C++ allows GCC to fuse this product into a later addition (a
    // sum of weights) in some callers and not others, which would make decode rows differ
    // from prefill rows in the last bit.
    __asm__("" : "+x"(r));
    return r;
}

// K/V elements widened to f32: the identity for f32, a 16-bit shift for bf16 (exact).
inline float widen(float x) { return x; }
inline float widen(std::uint16_t x) { return std::bit_cast<float>(std::uint32_t(x) << 16); }
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const std::uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Lane order of K rows (and query rows) in incremental attention: each complete 16-dim chunk
// sits as [even dims, odd dims]; a last chunk of 8 stays in order. It is what bf16 rows give
// cheapest: one 32-byte load, then the dwords shifted left by 16 are the even dims and masked
// to their high halves the odd dims, one integer op per 8 dims (widening in order took a
// zero-extension and a shift per 8 dims, both on Zen 1's one shuffle pipe: twice the
// micro-ops). f32 rows take the same order (two shuffles and two lane permutes per 16 dims, in
// decode only; the tiles repack K in lane order once per task), so a result does not depend on
// the K element type.
inline int lane_position(int d, int hd) {
    const int c = d & ~15;
    if (c + 16 > hd) return d;
    return c + (d & 1) * 8 + ((d & 15) >> 1);
}

// Dims [c, c + 16) of a row in lane order: even dims, then odd dims.
inline void load16_lanes(const std::uint16_t* row, int c, __m256* even, __m256* odd) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c));
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(int(0xFFFF0000u))));
}
inline void load16_lanes(const float* row, int c, __m256* even, __m256* odd) {
    const __m256 a = _mm256_loadu_ps(row + c), b = _mm256_loadu_ps(row + c + 8);
    // [a0 a2 b0 b2 | a4 a6 b4 b6] -> 64-bit quarters 0, 2, 1, 3: [a0 a2 a4 a6 b0 b2 b4 b6].
    const auto quarters = [](__m256 v) {
        return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
    };
    *even = quarters(_mm256_shuffle_ps(a, b, 0x88));
    *odd = quarters(_mm256_shuffle_ps(a, b, 0xDD));
}
// Scores with head_dim in lanes (incremental attention): lane x of a key's accumulator sums
// q * k over lane position x of each 8-position chunk, chunk by chunk from zero, then each key's
// eight lanes add up along one fixed tree, ((0+1)+(2+3))+((4+5)+(6+7)) (two vhaddps, then the
// halves). Tiles and decode compute every score this way, so their rows agree to the bit.
inline __m128 reduce_keys4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}
inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}
// Where a query row keeps dim d: in lane order for incremental attention (lane_position), else
// in order.
inline int q_position(const AttentionArgs& a, int d) {
    return a.incremental ? lane_position(d, a.head_dim) : d;
}

}  // namespace
}  // namespace qvl::kernels::avx2
