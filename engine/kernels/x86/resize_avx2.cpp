// AVX2 passes of kernels/resize.h. Both pair taps so that one vpmaddwd does two multiply-adds
// per 32-bit lane: (in[k], in[k+1]) as int16 times (w[k], w[k+1]); an odd last tap is paired
// with a zero weight. Results are exact integers, hence identical to the reference.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/x86/tier_entries.h"

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

namespace {

// The scalar formula for one output pixel (row edges, where vector loads would leave the row).
inline void horizontal_pixel(const ResizeHorizontalArgs& a, const std::uint8_t* in,
                             std::uint8_t* out, int x) {
    const std::uint8_t* p = in + std::size_t(a.start[x]) * 3;
    const std::int16_t* w = a.weights + std::size_t(x) * a.taps;
    for (int c = 0; c < 3; ++c) {
        std::int32_t acc = std::int32_t(1) << (a.precision - 1);
        for (int k = 0; k < a.taps; ++k) acc += p[3 * k + c] * w[k];
        out[3 * x + c] = clamp_shift(acc, a.precision);
    }
}

}  // namespace

// Two output pixels per step, pixel x in the low 128-bit lane and x + 1 in the high lane. Per
// pair of taps an 8-byte load per pixel (two RGB pixels) becomes int16 (r0,r1,g0,g1,b0,b1,0,0)
// and one vpmaddwd adds both taps to the (r, g, b, 0) int32 sums of both pixels.
void resize_horizontal_rgb_u8(const ResizeHorizontalArgs& a) {
    const int pairs = (a.taps + 1) / 2;
    const int out_pairs = a.out_width / 2;
    const __m256i half = _mm256_set1_epi32(std::int32_t(1) << (a.precision - 1));
    const __m128i shift = _mm_cvtsi32_si128(a.precision);
    // Per output pair p and tap pair j: (w[2j], w[2j+1]) as int16 x4 for pixel 2p, then x4 for
    // pixel 2p + 1.
    std::vector<std::uint32_t> w(std::size_t(out_pairs) * pairs * 8);
    for (int p = 0; p < out_pairs; ++p) {
        for (int half_lane = 0; half_lane < 2; ++half_lane) {
            const int x = 2 * p + half_lane;
            const std::int16_t* wx = a.weights + std::size_t(x) * a.taps;
            for (int j = 0; j < pairs; ++j) {
                const std::int16_t w_hi = 2 * j + 1 < a.taps ? wx[2 * j + 1] : 0;
                std::uint32_t* dst = &w[(std::size_t(p) * pairs + j) * 8 + 4 * half_lane];
                for (int i = 0; i < 4; ++i) dst[i] = weight_pair(wx[2 * j], w_hi);
            }
        }
    }
    const __m256i gather =
        _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1, 0, -1, 3, -1, 1,
                         -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
    // The loads of pixel x end at byte 3 * start[x] + 6 * pairs + 1 (an odd tap count reads
    // one pixel past the window, under a zero weight); pixels whose loads would leave the row
    // take the scalar path.
    const std::size_t row_bytes = std::size_t(a.in_width) * 3;
    auto fits = [&](int x) { return std::size_t(a.start[x]) * 3 + 6 * pairs + 2 <= row_bytes; };
    for (int r = 0; r < a.rows; ++r) {
        const std::uint8_t* in = a.src + std::ptrdiff_t(r) * a.src_stride;
        std::uint8_t* out = a.dst + std::ptrdiff_t(r) * a.dst_stride;
        for (int p = 0; p < out_pairs; ++p) {
            const int x = 2 * p;
            if (!fits(x) || !fits(x + 1)) {
                horizontal_pixel(a, in, out, x);
                horizontal_pixel(a, in, out, x + 1);
                continue;
            }
            const std::uint8_t* p0 = in + std::size_t(a.start[x]) * 3;
            const std::uint8_t* p1 = in + std::size_t(a.start[x + 1]) * 3;
            const std::uint32_t* wp = &w[std::size_t(p) * pairs * 8];
            __m256i acc = half;
            for (int j = 0; j < pairs; ++j) {
                const __m256i v = _mm256_inserti128_si256(
                    _mm256_castsi128_si256(
                        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p0 + 6 * j))),
                    _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p1 + 6 * j)), 1);
                const __m256i wj = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 8 * j));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_shuffle_epi8(v, gather), wj));
            }
            acc = _mm256_sra_epi32(acc, shift);
            acc = _mm256_packus_epi16(_mm256_packs_epi32(acc, acc), acc);  // bytes r g b 0 per lane
            const auto rgb0 = std::uint32_t(_mm256_cvtsi256_si32(acc));
            const auto rgb1 = std::uint32_t(_mm256_extract_epi32(acc, 4));
            std::uint8_t* o = out + 3 * std::size_t(x);
            if (x + 2 < a.out_width) {
                // 4-byte stores; the spare byte lands on pixel x + 2, written after this one.
                std::memcpy(o, &rgb0, 4);
                std::memcpy(o + 3, &rgb1, 4);
            } else {
                const std::uint8_t bytes[6] = {std::uint8_t(rgb0),       std::uint8_t(rgb0 >> 8),
                                               std::uint8_t(rgb0 >> 16), std::uint8_t(rgb1),
                                               std::uint8_t(rgb1 >> 8),  std::uint8_t(rgb1 >> 16)};
                std::memcpy(o, bytes, 6);
            }
        }
        if (a.out_width % 2 != 0) horizontal_pixel(a, in, out, a.out_width - 1);
    }
}

}  // namespace qvl::kernels::avx2
