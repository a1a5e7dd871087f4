// AVX2 kernels/image_patch.h: eight pixels at a time, 24 bytes de-interleaved with byte
// shuffles into R, G, B, widened to float, normalised with vsubps/vdivps (correctly rounded,
// like the reference), stored to every temporal copy. Patches narrower than 8 and the last
// (patch % 8) columns go through the scalar formula. Also the streaming copy of the same header.
#include <immintrin.h>

#include <cstdint>

#include "kernels/x86/tier_entries.h"

namespace qvl::kernels::avx2 {

// Every field the loops need is copied into a local first: the stores go through float*, which
// may alias the args, so reading a.temporal inside the loop made the compiler reload it after
// every store (that loop overhead bounded this kernel, not the division: bench/README.md).
void patch_normalize_u8(const PatchNormalizeArgs& a) {
    const int patch = a.patch;
    const int temporal = a.temporal;
    const std::ptrdiff_t src_stride = a.src_stride;
    const std::uint8_t* const src = a.src;
    float* const dst = a.dst;
    const std::size_t plane = std::size_t(patch) * patch;
    const std::size_t channel_stride = std::size_t(temporal) * plane;
    // Bytes 0..15 (v0) and 8..23 (v1) of 8 RGB pixels -> the 8 samples of one channel.
    const __m128i lo0 = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i lo1 = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i lo2 = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i hi0 =
        _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i hi1 =
        _mm_setr_epi8(-1, -1, -1, -1, -1, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i hi2 =
        _mm_setr_epi8(-1, -1, -1, -1, -1, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256 mean0 = _mm256_set1_ps(a.mean[0]), mean1 = _mm256_set1_ps(a.mean[1]),
                 mean2 = _mm256_set1_ps(a.mean[2]);
    const __m256 std0 = _mm256_set1_ps(a.std_dev[0]), std1 = _mm256_set1_ps(a.std_dev[1]),
                 std2 = _mm256_set1_ps(a.std_dev[2]);
    const float mean_s[3] = {a.mean[0], a.mean[1], a.mean[2]};
    const float std_s[3] = {a.std_dev[0], a.std_dev[1], a.std_dev[2]};
    auto normalize = [](__m128i bytes, __m256 mean, __m256 std_dev) {
        const __m256 d = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), mean);
        return _mm256_div_ps(d, std_dev);
    };
    const int vec_end = patch / 8 * 8;
    for (int y = 0; y < patch; ++y) {
        const std::uint8_t* row = src + std::ptrdiff_t(y) * src_stride;
        float* out = dst + std::size_t(y) * patch;
        for (int x = 0; x < vec_end; x += 8) {
            const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 3 * x));
            const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 3 * x + 8));
            const __m256 r = normalize(
                _mm_or_si128(_mm_shuffle_epi8(v0, lo0), _mm_shuffle_epi8(v1, hi0)), mean0, std0);
            const __m256 g = normalize(
                _mm_or_si128(_mm_shuffle_epi8(v0, lo1), _mm_shuffle_epi8(v1, hi1)), mean1, std1);
            const __m256 b = normalize(
                _mm_or_si128(_mm_shuffle_epi8(v0, lo2), _mm_shuffle_epi8(v1, hi2)), mean2, std2);
            float* o = out + x;
            for (int t = 0; t < temporal; ++t, o += plane) {
                _mm256_storeu_ps(o, r);
                _mm256_storeu_ps(o + channel_stride, g);
                _mm256_storeu_ps(o + 2 * channel_stride, b);
            }
        }
        for (int x = vec_end; x < patch; ++x) {
            for (int c = 0; c < 3; ++c) {
                const float n = (static_cast<float>(row[3 * x + c]) - mean_s[c]) / std_s[c];
                for (int t = 0; t < temporal; ++t) out[c * channel_stride + t * plane + x] = n;
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
