// The avx2 vector kernels of the KernelTable (x86/tier_entries.h): the simd/ templates
// instantiated for xsimd::fma3<xsimd::avx2>.
#include "kernels/simd/activation_simd.h"
#include "kernels/simd/norm_simd.h"
#include "kernels/simd/pos_embed_simd.h"
#include "kernels/simd/rope_simd.h"
#include "kernels/simd/softmax_simd.h"
#include "kernels/x86/tier_entries.h"

namespace qvl::kernels {

namespace avx2 {
using Arch = xsimd::fma3<xsimd::avx2>;
}  // namespace avx2

constinit const VectorKernels avx2::kVectorKernels = {
    .layer_norm_f32 = &simd::layer_norm_f32<avx2::Arch>,
    .rms_norm_f32 = &simd::rms_norm_f32<avx2::Arch>,
    .gelu_tanh_f32 = &simd::gelu_tanh_f32<avx2::Arch>,
    .gelu_erf_f32 = &simd::gelu_erf_f32<avx2::Arch>,
    .silu_mul_f32 = &simd::silu_mul_f32<avx2::Arch>,
    .add_f32 = &simd::add_f32<avx2::Arch>,
    .softmax_f32 = &simd::softmax_f32<avx2::Arch>,
    .rope_f32 = &simd::rope_f32<avx2::Arch>,
    .pos_embed_interpolate = &simd::pos_embed_interpolate<avx2::Arch>,
};

}  // namespace qvl::kernels
