// Internal to image preprocessing: the per-axis int16 weights of PyTorch's antialiased bicubic
// uint8 resize and the two separable passes. resize_bicubic_aa (image_preprocess.h) is the
// public entry; tests reach these to check the weights against the reference.
#pragma once

#include <cstdint>
#include <vector>

namespace qvl::model::detail {

// Weights for one axis, in_size -> out_size. Output i reads inputs start[i] .. start[i]+taps-1
// with weights w[i*taps .. i*taps+taps-1]; windows are shifted inside [0, in_size) and padded
// with zero weights so that every output has the same tap count.
// value = clamp((sum(input * w) + 2^(precision-1)) >> precision, 0, 255).
struct AxisWeights {
    int in_size = 0;
    int out_size = 0;
    int taps = 0;
    int precision = 0;
    std::vector<int> start;
    std::vector<std::int16_t> w;
};

// Mirrors PyTorch _compute_index_ranges_int16_weights (bicubic, antialias, align_corners off).
AxisWeights bicubic_aa_weights(int in_size, int out_size);

// Horizontal pass: src is rows x in_w x 3, dst rows x out_w x 3 (both packed).
void resize_rows_horizontal(const std::uint8_t* src, std::uint8_t* dst, int rows,
                            const AxisWeights& wx);
// Vertical pass: src is in_h x row_bytes, dst out_h x row_bytes (both packed).
void resize_columns_vertical(const std::uint8_t* src, std::uint8_t* dst, std::size_t row_bytes,
                             const AxisWeights& wy);

}  // namespace qvl::model::detail
