#include "kernels/weight_panels.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace qvl::kernels {

std::size_t panel_bytes(int rows, int cols) {
    return std::size_t(panel_count(rows)) * std::size_t(panel_pairs(cols)) * kPanelOutputs *
           sizeof(std::uint32_t);
}

void pack_panels(const std::uint16_t* w, std::ptrdiff_t ldw, int rows, int cols, int panel0,
                 int panel1, std::uint32_t* out) {
    const std::ptrdiff_t pairs = panel_pairs(cols);
    const std::ptrdiff_t full = cols / 2;  // pairs with both halves inside the row
    for (int p = panel0; p < panel1; ++p) {
        std::uint32_t* panel = out + std::ptrdiff_t(p) * pairs * kPanelOutputs;
        const int r0 = p * kPanelOutputs;
        const int live = std::clamp(rows - r0, 0, kPanelOutputs);
        const std::uint16_t* src[kPanelOutputs];
        for (int c = 0; c < kPanelOutputs; ++c)
            src[c] = w + std::ptrdiff_t(r0 + std::min(c, live - 1)) * ldw;
        // Written in order, 64 bytes per pair; the 16 source rows advance together, each
        // cache line of them serving 32 pairs from L1.
        std::ptrdiff_t t = 0;
#if defined(__SSE2__)
        // Whole panels four pairs at a time, as 4 x 4 transposes of 32-bit pairs (SSE2 is part
        // of x86-64, so this file keeps its baseline flags). Element by element, the copy was
        // instruction-bound: a quarter of a bf16 load's samples.
        if (live == kPanelOutputs) {
            for (; t + 4 <= full; t += 4) {
                std::uint32_t* dst = panel + t * kPanelOutputs;
                for (int c0 = 0; c0 < kPanelOutputs; c0 += 4) {
                    __m128i r[4];
                    for (int i = 0; i < 4; ++i) {
                        r[i] =
                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[c0 + i] + 2 * t));
                    }
                    const __m128i lo01 = _mm_unpacklo_epi32(r[0], r[1]);  // pairs t, t+1
                    const __m128i lo23 = _mm_unpacklo_epi32(r[2], r[3]);
                    const __m128i hi01 = _mm_unpackhi_epi32(r[0], r[1]);  // pairs t+2, t+3
                    const __m128i hi23 = _mm_unpackhi_epi32(r[2], r[3]);
                    const __m128i pair[4] = {
                        _mm_unpacklo_epi64(lo01, lo23), _mm_unpackhi_epi64(lo01, lo23),
                        _mm_unpacklo_epi64(hi01, hi23), _mm_unpackhi_epi64(hi01, hi23)};
                    for (int j = 0; j < 4; ++j) {
                        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j * kPanelOutputs + c0),
                                         pair[j]);
                    }
                }
            }
        }
#endif
        for (; t < full; ++t) {
            std::uint32_t* dst = panel + t * kPanelOutputs;
            for (int c = 0; c < kPanelOutputs; ++c) {
                std::uint32_t v;
                std::memcpy(&v, src[c] + 2 * t, sizeof v);  // little endian: k even in the low half
                dst[c] = c < live ? v : 0u;
            }
        }
        if (full < pairs) {  // odd k: the last pair's high half is zero
            std::uint32_t* dst = panel + full * kPanelOutputs;
            for (int c = 0; c < kPanelOutputs; ++c) dst[c] = c < live ? src[c][2 * full] : 0u;
        }
    }
}

}  // namespace qvl::kernels
