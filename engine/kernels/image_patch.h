// One row of Qwen-VL pixel_values from a packed uint8 RGB image: the patch x patch block at src,
// normalised per channel, laid out (channel, temporal copy, y, x):
//   dst[((c * temporal + t) * patch + y) * patch + x] = (float(src[y * src_stride + 3 * x + c])
//                                                        - mean[c]) / std_dev[c]
// in float32 (each operation correctly rounded, so every ISA gives the same bits; mean and
// std_dev are in 0..255 units: the HF fast processor's fused rescale+normalise). No alignment
// required; dst must not overlap src. Entries: KernelTable::patch_normalize_u8 and
// copy_f32_streaming (kernels/kernel_table.h).
#pragma once

#include <cstddef>
#include <cstdint>

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

// dst[i] = src[i] for i < n, the same bits as memcpy, but the aligned part of dst is written
// with non-temporal stores (fenced before returning): for a large output written once and not
// read soon (pixel_values, 50 MB for a 1920x1080 image), which then costs one write to DRAM
// instead of a read for ownership plus a write, and does not evict the working set. Slower
// than plain stores into memory the kernel has just zeroed (a first touch). No alignment
// required; src and dst must not overlap.

namespace ref {
void patch_normalize_u8(const PatchNormalizeArgs& args);
void copy_f32_streaming(const float* src, float* dst, std::size_t n);
}  // namespace ref

}  // namespace qvl::kernels
