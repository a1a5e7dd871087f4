// AVX2 kernels/image_patch.h: eight pixels at a time, 24 bytes de-interleaved with byte
// shuffles into R, G, B, widened to float, normalised with vsubps/vdivps (correctly rounded,
// like the reference), stored to every temporal copy. Patches narrower than 8 and the last
// (patch % 8) columns go through the scalar formula. Also the streaming copy of the same header.
#include <immintrin.h>

#include <cstdint>

#include "kernels/image_patch.h"

namespace qvl::kernels::avx2 {

void patch_normalize_u8(const PatchNormalizeArgs& a) {
    const std::size_t plane = std::size_t(a.patch) * a.patch;
    const std::size_t channel_stride = std::size_t(a.temporal) * plane;
    // Bytes 0..15 (v0) and 8..23 (v1) of 8 RGB pixels -> the 8 samples of one channel.
    const __m128i lo[3] = {
        _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
        _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
        _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)};
    const __m128i hi[3] = {
        _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1),
        _mm_setr_epi8(-1, -1, -1, -1, -1, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1),
        _mm_setr_epi8(-1, -1, -1, -1, -1, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1)};
    __m256 mean[3], std_dev[3];
    for (int c = 0; c < 3; ++c) {
        mean[c] = _mm256_set1_ps(a.mean[c]);
        std_dev[c] = _mm256_set1_ps(a.std_dev[c]);
    }
    const int vec_end = a.patch / 8 * 8;
    for (int y = 0; y < a.patch; ++y) {
        const std::uint8_t* row = a.src + std::ptrdiff_t(y) * a.src_stride;
        float* out = a.dst + std::size_t(y) * a.patch;
        for (int x = 0; x < vec_end; x += 8) {
            const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 3 * x));
            const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 3 * x + 8));
            for (int c = 0; c < 3; ++c) {
                const __m128i bytes =
                    _mm_or_si128(_mm_shuffle_epi8(v0, lo[c]), _mm_shuffle_epi8(v1, hi[c]));
                const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
                const __m256 n = _mm256_div_ps(_mm256_sub_ps(f, mean[c]), std_dev[c]);
                float* dst = out + c * channel_stride + x;
                for (int t = 0; t < a.temporal; ++t) _mm256_storeu_ps(dst + t * plane, n);
            }
        }
        for (int x = vec_end; x < a.patch; ++x) {
            for (int c = 0; c < 3; ++c) {
                const float n = (static_cast<float>(row[3 * x + c]) - a.mean[c]) / a.std_dev[c];
                for (int t = 0; t < a.temporal; ++t) out[c * channel_stride + t * plane + x] = n;
            }
        }
    }
}

void copy_f32_streaming(const float* src, float* dst, std::size_t n) {
    std::size_t i = 0;
    // Plain stores up to the first 32-byte boundary of dst (vmovntps needs it), streaming
    // stores for whole vectors after it, plain stores for the tail.
    while (i < n && (reinterpret_cast<std::uintptr_t>(dst + i) & 31) != 0) {
        dst[i] = src[i];
        ++i;
    }
    for (; i + 8 <= n; i += 8) _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
    for (; i < n; ++i) dst[i] = src[i];
    _mm_sfence();  // streaming stores are weakly ordered: make them visible like plain ones
}

}  // namespace qvl::kernels::avx2
