// AVX2 passes of kernels/resize.h. Both pair taps so that one vpmaddwd does two multiply-adds
// per 32-bit lane: (in[k], in[k+1]) as int16 times (w[k], w[k+1]); an odd last tap is paired
// with a zero weight. Results are exact integers, hence identical to the reference.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/resize.h"

namespace qvl::kernels::avx2 {

namespace {

constexpr int kMaxVerticalTaps = 128;  // beyond (a > 32x downscale) the reference runs

inline std::uint32_t weight_pair(std::int16_t lo, std::int16_t hi) {
    return std::uint32_t(std::uint16_t(lo)) | (std::uint32_t(std::uint16_t(hi)) << 16);
}

inline std::uint8_t clamp_shift(std::int32_t acc, int precision) {
    return static_cast<std::uint8_t>(std::clamp(acc >> precision, 0, 255));
}

// Adds w.lo * a[i] + w.hi * b[i] for 16 bytes at a and b into lo (i = 0-3, 8-11) and hi
// (i = 4-7, 12-15): the lane order of vpunpck{l,h}wd, which vpackssdw(lo, hi) undoes.
inline void madd16(const std::uint8_t* a, const std::uint8_t* b, __m256i w, __m256i* lo,
                   __m256i* hi) {
    const __m256i va = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
    const __m256i vb = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    *lo = _mm256_add_epi32(*lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(va, vb), w));
    *hi = _mm256_add_epi32(*hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(va, vb), w));
}

}  // namespace

void resize_vertical_u8(const ResizeVerticalArgs& a) {
    if (a.taps > kMaxVerticalTaps) return ref::resize_vertical_u8(a);
    const int pairs = (a.taps + 1) / 2;
    const std::int32_t half_scalar = std::int32_t(1) << (a.precision - 1);
    const __m256i half = _mm256_set1_epi32(half_scalar);
    const __m128i shift = _mm_cvtsi32_si128(a.precision);
    const std::uint8_t* rows[kMaxVerticalTaps + 1];
    __m256i w[kMaxVerticalTaps / 2];
    for (int y = 0; y < a.out_rows; ++y) {
        const std::int16_t* wy = a.weights + std::size_t(y) * a.taps;
        const std::uint8_t* first = a.src + std::ptrdiff_t(a.start[y]) * a.src_stride;
        for (int k = 0; k < a.taps; ++k) rows[k] = first + std::ptrdiff_t(k) * a.src_stride;
        rows[a.taps] = rows[a.taps - 1];  // the odd tap's partner: read again, weight 0
        for (int j = 0; j < pairs; ++j) {
            const std::int16_t w_hi = 2 * j + 1 < a.taps ? wy[2 * j + 1] : 0;
            w[j] = _mm256_set1_epi32(int(weight_pair(wy[2 * j], w_hi)));
        }
        std::uint8_t* out = a.dst + std::ptrdiff_t(y) * a.dst_stride;
        std::size_t x = 0;
        for (; x + 32 <= a.row_bytes; x += 32) {
            __m256i s0 = half, s1 = half, s2 = half, s3 = half;
            for (int j = 0; j < pairs; ++j) {
                madd16(rows[2 * j] + x, rows[2 * j + 1] + x, w[j], &s0, &s1);
                madd16(rows[2 * j] + x + 16, rows[2 * j + 1] + x + 16, w[j], &s2, &s3);
            }
            const __m256i p0 = _mm256_packs_epi32(_mm256_sra_epi32(s0, shift),
                                                  _mm256_sra_epi32(s1, shift));  // bytes 0-15
            const __m256i p1 = _mm256_packs_epi32(_mm256_sra_epi32(s2, shift),
                                                  _mm256_sra_epi32(s3, shift));  // 16-31
            const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(p0, p1), 0xD8);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + x), bytes);
        }
        for (; x < a.row_bytes; ++x) {
            std::int32_t acc = half_scalar;
            for (int k = 0; k < a.taps; ++k) acc += rows[k][x] * wy[k];
            out[x] = clamp_shift(acc, a.precision);
        }
    }
}

// One output pixel per step: taps in groups of four pixels (12 bytes of a 16-byte load); the
// low 128-bit lane takes taps (0, 1) as int16 pairs per channel, the high lane taps (2, 3).
void resize_horizontal_rgb_u8(const ResizeHorizontalArgs& a) {
    const int groups = (a.taps + 3) / 4;
    const std::int32_t half_scalar = std::int32_t(1) << (a.precision - 1);
    const __m128i shift = _mm_cvtsi32_si128(a.precision);
    // Per output pixel and group: the int16 weight pairs, (w0,w1) x4 | (w2,w3) x4.
    std::vector<std::uint32_t> w(std::size_t(a.out_width) * groups * 8);
    for (int x = 0; x < a.out_width; ++x) {
        const std::int16_t* wx = a.weights + std::size_t(x) * a.taps;
        auto tap = [&](int k) { return k < a.taps ? wx[k] : std::int16_t(0); };
        for (int g = 0; g < groups; ++g) {
            std::uint32_t* dst = &w[(std::size_t(x) * groups + g) * 8];
            for (int i = 0; i < 4; ++i) {
                dst[i] = weight_pair(tap(4 * g), tap(4 * g + 1));
                dst[4 + i] = weight_pair(tap(4 * g + 2), tap(4 * g + 3));
            }
        }
    }
    // Bytes r0 g0 b0 r1 g1 b1 r2 g2 b2 r3 g3 b3 -> int16 (r0,r1,g0,g1,b0,b1,0,0) in the low
    // lane and (r2,r3,g2,g3,b2,b3,0,0) in the high lane (-1: a zero byte).
    const __m256i gather =
        _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,  //
                         6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
    // The vector path reads 16 bytes per group: up to 4 + 12 * (groups * 4 - taps) bytes past
    // the window, so pixels whose reads would leave the row take the scalar path.
    const std::size_t row_bytes = std::size_t(a.in_width) * 3;
    for (int r = 0; r < a.rows; ++r) {
        const std::uint8_t* in = a.src + std::ptrdiff_t(r) * a.src_stride;
        std::uint8_t* out = a.dst + std::ptrdiff_t(r) * a.dst_stride;
        for (int x = 0; x < a.out_width; ++x) {
            const std::size_t first = std::size_t(a.start[x]) * 3;
            if (first + std::size_t(groups) * 12 + 4 > row_bytes) {
                const std::int16_t* wx = a.weights + std::size_t(x) * a.taps;
                for (int c = 0; c < 3; ++c) {
                    std::int32_t acc = half_scalar;
                    for (int k = 0; k < a.taps; ++k) acc += in[first + 3 * k + c] * wx[k];
                    out[3 * x + c] = clamp_shift(acc, a.precision);
                }
                continue;
            }
            const std::uint32_t* wx = &w[std::size_t(x) * groups * 8];
            __m256i acc = _mm256_setzero_si256();
            for (int g = 0; g < groups; ++g) {
                const __m128i v =
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + first + 12 * g));
                const __m256i pairs = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(v), gather);
                const __m256i wg = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wx + 8 * g));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, wg));
            }
            __m128i sum =
                _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
            sum = _mm_sra_epi32(_mm_add_epi32(sum, _mm_set1_epi32(half_scalar)), shift);
            sum = _mm_packus_epi16(_mm_packs_epi32(sum, sum), sum);
            const std::uint32_t rgb = std::uint32_t(_mm_cvtsi128_si32(sum));
            out[3 * x + 0] = std::uint8_t(rgb);
            out[3 * x + 1] = std::uint8_t(rgb >> 8);
            out[3 * x + 2] = std::uint8_t(rgb >> 16);
        }
    }
}

}  // namespace qvl::kernels::avx2
