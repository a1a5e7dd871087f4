// bf16 weights in panels (WeightType::kBF16Panels): the checkpoint's [n, k] matrices rearranged
// once at load so that the GEMM micro-kernels of every tier read them in order, with no
// transposes (packing a [n, k] block costs ~9 % of a prefill, and the decode step cannot
// amortize it at all).
//
// Layout of a matrix of `rows` outputs (n) by `cols` inputs (k), pairs = ceil(cols / 2):
// panel p holds outputs [16p, 16p + 16); its pair t holds, for each of those 16 outputs c, the
// bf16 weights of k = 2t (low 16 bits) and k = 2t + 1 (high 16 bits) as one uint32 at index
//   (p * pairs + t) * 16 + c.
// Outputs past `rows` and the k past `cols` (an odd k's last high half) are zero. A pair of
// consecutive k per 32-bit lane is what vdpbf16ps multiplies; f32 kernels widen it with one
// shift (even k) and one mask (odd k). In GemmArgs: w = the uint32 array, ldw = pairs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::kernels {

inline constexpr int kPanelOutputs = 16;

inline std::ptrdiff_t panel_pairs(int cols) { return (std::ptrdiff_t(cols) + 1) / 2; }
inline int panel_count(int rows) { return (rows + kPanelOutputs - 1) / kPanelOutputs; }
// Bytes of the panel form of a rows x cols matrix.
std::size_t panel_bytes(int rows, int cols);

// Writes panels [panel0, panel1) of the bf16 matrix w ([rows, cols], row stride ldw elements)
// into out (panel_bytes(rows, cols) bytes for all panels; any alignment, 64 bytes is best).
// Panels are independent, so callers may run disjoint ranges on different threads.
void pack_panels(const std::uint16_t* w, std::ptrdiff_t ldw, int rows, int cols, int panel0,
                 int panel1, std::uint32_t* out);

// Interleaves 16 rows word by word: dst word t * 16 + c = the 4-byte word t of rows[c], for
// t < words (any alignment). The transposition behind the bf16 panels (a word is a k pair) and
// the int8 panels (a word is 4 consecutive k of one block).
void interleave_words16(const void* const rows[kPanelOutputs], std::ptrdiff_t words, void* dst);

// The bf16 bits of weight [row][col] of a panel matrix (references and tests).
inline std::uint16_t panel_weight_bits(const std::uint32_t* panels, std::ptrdiff_t pairs, int row,
                                       int col) {
    const std::uint32_t v =
        panels[(std::ptrdiff_t(row / kPanelOutputs) * pairs + col / 2) * kPanelOutputs +
               row % kPanelOutputs];
    return std::uint16_t(col % 2 == 0 ? v & 0xffffu : v >> 16);
}

}  // namespace qvl::kernels
