// Entry points of kernels/resize.h and kernels/image_patch.h: the reference on kScalar, the
// AVX2 code on every higher tier (these passes are load/shuffle/store bound and gain little
// from 512-bit vectors).
#include "kernels/image_patch.h"
#include "kernels/resize.h"

namespace qvl::kernels {

void resize_vertical_u8(const ResizeVerticalArgs& args, Isa isa) {
    if (isa == Isa::kScalar) return ref::resize_vertical_u8(args);
    avx2::resize_vertical_u8(args);
}

void resize_horizontal_rgb_u8(const ResizeHorizontalArgs& args, Isa isa) {
    if (isa == Isa::kScalar) return ref::resize_horizontal_rgb_u8(args);
    avx2::resize_horizontal_rgb_u8(args);
}

void patch_normalize_u8(const PatchNormalizeArgs& args, Isa isa) {
    if (isa == Isa::kScalar) return ref::patch_normalize_u8(args);
    avx2::patch_normalize_u8(args);
}

void copy_f32_streaming(const float* src, float* dst, std::size_t n, Isa isa) {
    if (isa == Isa::kScalar) return ref::copy_f32_streaming(src, dst, n);
    avx2::copy_f32_streaming(src, dst, n);
}

}  // namespace qvl::kernels
