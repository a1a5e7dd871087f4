#include "kernels/weight_panels.h"

#include <algorithm>
#include <cstring>

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
        for (std::ptrdiff_t t = 0; t < full; ++t) {
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
