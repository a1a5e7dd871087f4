// Internal to image preprocessing: the per-axis int16 weights of PyTorch's antialiased bicubic
// uint8 resize and a banded driver (the passes that apply them are kernels/resize.h).
// resize_bicubic_aa (image_preprocess.h) is the public entry; tests reach this to check the
// weights.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "io/image.h"

namespace qvl::image::detail {

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

// resize_bicubic_aa (image_preprocess.h) into *out (its storage reused when large enough; out
// must not be &src), produced in bands of band_rows output rows; on_band(first_row, rows) runs
// after each band is written, so a consumer can read the rows while they are still in cache.
// One band of out_height rows is the plain resize.
void resize_bicubic_aa_banded(const io::Image& src, int out_height, int out_width, int band_rows,
                              io::Image* out, const std::function<void(int, int)>& on_band);

}  // namespace qvl::image::detail
