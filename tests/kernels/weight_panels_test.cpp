// pack_panels against the layout it documents (kernels/weight_panels.h), element by element:
// whole and partial panels, even and odd k, short rows and the four-pair blocks of its SIMD path
// with their tails, a row stride longer than the row, and panel ranges written separately.
#include "kernels/weight_panels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace qvl::kernels {
namespace {

// The expected uint32 at (panel p, pair t, output c), from the layout's definition.
std::uint32_t expected_word(const std::vector<std::uint16_t>& w, std::ptrdiff_t ldw, int rows,
                            int cols, int p, std::ptrdiff_t t, int c) {
    const int row = p * kPanelOutputs + c;
    if (row >= rows) return 0;
    const auto at = [&](std::ptrdiff_t k) -> std::uint32_t {
        return k < cols ? w[std::size_t(row * ldw + k)] : 0u;
    };
    return at(2 * t) | (at(2 * t + 1) << 16);
}

TEST(WeightPanels, PackMatchesTheLayoutOnOddShapes) {
    std::mt19937 rng(17);
    for (int rows : {1, 5, 15, 16, 17, 31, 32, 33, 50}) {
        for (int cols : {1, 2, 3, 7, 8, 9, 10, 15, 16, 17, 63, 64, 65, 130}) {
            const std::ptrdiff_t ldw = cols + 3;  // padding after each row must not be read
            std::vector<std::uint16_t> w(std::size_t(rows) * ldw);
            for (auto& x : w) x = std::uint16_t(rng());
            const std::ptrdiff_t pairs = panel_pairs(cols);
            const int panels = panel_count(rows);
            // One word more on each side: nothing may be written outside the matrix's panels.
            const std::uint32_t kGuard = 0xdeadbeefu;
            std::vector<std::uint32_t> out(panel_bytes(rows, cols) / sizeof(std::uint32_t) + 2,
                                           kGuard);
            // Panels in two ranges, as two threads would write them.
            const int split = panels / 2;
            pack_panels(w.data(), ldw, rows, cols, split, panels, out.data() + 1);
            pack_panels(w.data(), ldw, rows, cols, 0, split, out.data() + 1);
            ASSERT_EQ(out.front(), kGuard) << rows << "x" << cols;
            ASSERT_EQ(out.back(), kGuard) << rows << "x" << cols;
            for (int p = 0; p < panels; ++p) {
                for (std::ptrdiff_t t = 0; t < pairs; ++t) {
                    for (int c = 0; c < kPanelOutputs; ++c) {
                        const std::uint32_t got = out[1 + (p * pairs + t) * kPanelOutputs + c];
                        ASSERT_EQ(got, expected_word(w, ldw, rows, cols, p, t, c))
                            << rows << "x" << cols << " panel " << p << " pair " << t << " output "
                            << c;
                    }
                }
            }
            for (int r = 0; r < rows; ++r) {
                for (int k = 0; k < cols; ++k) {
                    ASSERT_EQ(panel_weight_bits(out.data() + 1, pairs, r, k),
                              w[std::size_t(r * ldw + k)]);
                }
            }
        }
    }
}

}  // namespace
}  // namespace qvl::kernels
