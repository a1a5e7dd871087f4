// Reference of kernels/image_patch.h: the formula, loop for loop.
#include <cstring>

#include "kernels/image_patch.h"

namespace qvl::kernels::ref {

void patch_normalize_u8(const PatchNormalizeArgs& a) {
    const std::size_t plane = std::size_t(a.patch) * a.patch;
    for (int c = 0; c < 3; ++c) {
        float* first = a.dst + std::size_t(c) * a.temporal * plane;
        for (int y = 0; y < a.patch; ++y) {
            const std::uint8_t* row = a.src + std::ptrdiff_t(y) * a.src_stride;
            for (int x = 0; x < a.patch; ++x) {
                first[std::size_t(y) * a.patch + x] =
                    (static_cast<float>(row[3 * x + c]) - a.mean[c]) / a.std_dev[c];
            }
        }
        for (int t = 1; t < a.temporal; ++t)
            std::memcpy(first + t * plane, first, plane * sizeof(float));
    }
}

void copy_f32_streaming(const float* src, float* dst, std::size_t n) {
    if (n != 0) std::memcpy(dst, src, n * sizeof(float));
}

}  // namespace qvl::kernels::ref
