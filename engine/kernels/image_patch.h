// One row of Qwen-VL pixel_values from a packed uint8 RGB image: the patch x patch block at src,
// normalised per channel, laid out (channel, temporal copy, y, x):
//   dst[((c * temporal + t) * patch + y) * patch + x] = (float(src[y * src_stride + 3 * x + c])
//                                                        - mean[c]) / std_dev[c]
// in float32 (each operation correctly rounded, so every ISA gives the same bits; mean and
// std_dev are in 0..255 units: the HF fast processor's fused rescale+normalise). No alignment
// required; dst must not overlap src.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa.h"

namespace qvl::kernels {

struct PatchNormalizeArgs {
    const std::uint8_t* src = nullptr;  // the patch's top-left pixel
    std::ptrdiff_t src_stride = 0;      // bytes per image row
    int patch = 0;                      // >= 1
    int temporal = 1;                   // copies of the frame, >= 1
    const float* mean = nullptr;        // [3]
    const float* std_dev = nullptr;     // [3], non-zero
    float* dst = nullptr;               // [3 * temporal * patch * patch]
};
void patch_normalize_u8(const PatchNormalizeArgs& args, Isa isa);

namespace ref {
void patch_normalize_u8(const PatchNormalizeArgs& args);
}
namespace avx2 {
void patch_normalize_u8(const PatchNormalizeArgs& args);
}

}  // namespace qvl::kernels
