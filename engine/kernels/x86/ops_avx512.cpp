// The avx512 vector kernels of the KernelTable (x86/tier_entries.h): the simd/ templates
// instantiated for xsimd::avx512bw.
// GCC 12 reports the deliberately undefined lanes of AVX-512 intrinsics (_mm512_undefined_*,
// used by xsimd) as (maybe-)uninitialized; a false positive, silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/simd/activation_simd.h"
#include "kernels/simd/norm_simd.h"
#include "kernels/simd/pos_embed_simd.h"
#include "kernels/simd/rope_simd.h"
#include "kernels/simd/softmax_simd.h"
#include "kernels/x86/tier_entries.h"

namespace qvl::kernels {

namespace avx512 {
using Arch = xsimd::avx512bw;
}  // namespace avx512

constinit const VectorKernels avx512::kVectorKernels = {
    .layer_norm_f32 = &simd::layer_norm_f32<avx512::Arch>,
    .rms_norm_f32 = &simd::rms_norm_f32<avx512::Arch>,
    .gelu_tanh_f32 = &simd::gelu_tanh_f32<avx512::Arch>,
    .gelu_erf_f32 = &simd::gelu_erf_f32<avx512::Arch>,
    .silu_mul_f32 = &simd::silu_mul_f32<avx512::Arch>,
    .add_f32 = &simd::add_f32<avx512::Arch>,
    .softmax_f32 = &simd::softmax_f32<avx512::Arch>,
    .rope_f32 = &simd::rope_f32<avx512::Arch>,
    .pos_embed_interpolate = &simd::pos_embed_interpolate<avx512::Arch>,
};

}  // namespace qvl::kernels
