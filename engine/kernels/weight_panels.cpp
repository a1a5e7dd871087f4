#include "kernels/weight_panels.h"

#include <algorithm>

namespace qvl::kernels {

std::size_t panel_bytes(int rows, int cols) {
    return std::size_t(panel_count(rows)) * std::size_t(panel_pairs(cols)) * kPanelOutputs *
           sizeof(std::uint32_t);
}

void pack_panels(const std::uint16_t* w, std::ptrdiff_t ldw, int rows, int cols, int panel0,
                 int panel1, std::uint32_t* out) {
    const std::ptrdiff_t pairs = panel_pairs(cols);
    // Blocks of 64 pairs: the 16 source rows' 256-byte pieces stay in L1 while the block is
    // written out in order.
    constexpr std::ptrdiff_t kBlock = 64;
    for (int p = panel0; p < panel1; ++p) {
        std::uint32_t* panel = out + std::ptrdiff_t(p) * pairs * kPanelOutputs;
        const int r0 = p * kPanelOutputs;
        const int live = std::clamp(rows - r0, 0, kPanelOutputs);
        for (std::ptrdiff_t t0 = 0; t0 < pairs; t0 += kBlock) {
            const std::ptrdiff_t t1 = std::min(pairs, t0 + kBlock);
            for (int c = 0; c < kPanelOutputs; ++c) {
                const std::uint16_t* src = w + std::ptrdiff_t(r0 + c) * ldw;
                for (std::ptrdiff_t t = t0; t < t1; ++t) {
                    std::uint32_t v = 0;
                    if (c < live) {
                        const std::ptrdiff_t k = 2 * t;
                        v = src[k];
                        if (k + 1 < cols) v |= std::uint32_t(src[k + 1]) << 16;
                    }
                    panel[t * kPanelOutputs + c] = v;
                }
            }
        }
    }
}

}  // namespace qvl::kernels
