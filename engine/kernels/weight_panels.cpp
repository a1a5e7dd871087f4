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

void interleave_words16(const void* const rows[kPanelOutputs], std::ptrdiff_t words, void* dst) {
    const auto* const* src = reinterpret_cast<const unsigned char* const*>(rows);
    auto* out = static_cast<unsigned char*>(dst);
    std::ptrdiff_t t = 0;
#if defined(__SSE2__)
    // Four words at a time as 4 x 4 transposes (SSE2 is part of x86-64, so this file keeps its
    // baseline flags). Word by word, the copy was instruction-bound: a quarter of a bf16 load's
    // samples.
    for (; t + 4 <= words; t += 4) {
        for (int c0 = 0; c0 < kPanelOutputs; c0 += 4) {
            __m128i r[4];
            for (int i = 0; i < 4; ++i) {
                r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[c0 + i] + 4 * t));
            }
            const __m128i lo01 = _mm_unpacklo_epi32(r[0], r[1]);  // words t, t+1
            const __m128i lo23 = _mm_unpacklo_epi32(r[2], r[3]);
            const __m128i hi01 = _mm_unpackhi_epi32(r[0], r[1]);  // words t+2, t+3
            const __m128i hi23 = _mm_unpackhi_epi32(r[2], r[3]);
            const __m128i word[4] = {_mm_unpacklo_epi64(lo01, lo23), _mm_unpackhi_epi64(lo01, lo23),
                                     _mm_unpacklo_epi64(hi01, hi23),
                                     _mm_unpackhi_epi64(hi01, hi23)};
            for (int j = 0; j < 4; ++j) {
                _mm_storeu_si128(
                    reinterpret_cast<__m128i*>(out + ((t + j) * kPanelOutputs + c0) * 4), word[j]);
            }
        }
    }
#endif
    for (; t < words; ++t) {
        for (int c = 0; c < kPanelOutputs; ++c) {
            std::memcpy(out + (t * kPanelOutputs + c) * 4, src[c] + 4 * t, 4);
        }
    }
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
        if (live == kPanelOutputs) {  // the 16 rows' pairs as they are
            const void* row_ptrs[kPanelOutputs];
            std::copy(src, src + kPanelOutputs, row_ptrs);
            interleave_words16(row_ptrs, full, panel);
            t = full;
        }
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
