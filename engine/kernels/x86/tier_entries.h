// Internal to kernels/: the entries each ISA translation unit in kernels/x86/ contributes to the
// KernelTable of its tier (kernels/kernel_table.h, assembled in kernel_table.cpp). Every name
// lives in an ISA-named namespace (no symbol may be shared between ISA flags: the linker
// could keep the wider tier's copy; the isa_symbol_isolation test checks it).
#pragma once

#include "kernels/kernel_table.h"

namespace qvl::kernels {

namespace avx2 {
// The simd/ templates instantiated for xsimd::fma3<xsimd::avx2> (x86/ops_avx2.cpp).
extern const VectorKernels kVectorKernels;
// f32 GEMM tiles (x86/gemm_avx2.cpp); isa is the table's to set.
extern const GemmKernels kGemmKernels;
// Hand-written flash attention (x86/attention_avx2.cpp).
void attention_run_task(const AttentionArgs& args, int task, int num_tasks);
// Image kernels (x86/resize_avx2.cpp, x86/image_patch_avx2.cpp).
void resize_vertical_u8(const ResizeVerticalArgs& args);
void resize_horizontal_rgb_u8(const ResizeHorizontalArgs& args);
void patch_normalize_u8(const PatchNormalizeArgs& args);
void copy_f32_streaming(const float* src, float* dst, std::size_t n);
}  // namespace avx2

namespace avx512 {
// The simd/ templates instantiated for xsimd::avx512bw (x86/ops_avx512.cpp).
extern const VectorKernels kVectorKernels;
// f32 GEMM tiles (x86/gemm_avx512.cpp); isa is the table's to set.
extern const GemmKernels kGemmKernels;
// Hand-written attention (x86/attention_avx512.cpp).
void attention_run_task(const AttentionArgs& args, int task, int num_tasks);
}  // namespace avx512

namespace avx512bf16 {
// GEMM tiles with bf16 products (x86/gemm_avx512bf16.cpp); isa is the table's to set.
extern const GemmKernels kGemmKernels;
// Attention with bf16 products (x86/attention_avx512bf16.cpp) for the shapes it supports.
bool attention_supported(const AttentionArgs& args);
void attention_run_task(const AttentionArgs& args, int task, int num_tasks);
}  // namespace avx512bf16

}  // namespace qvl::kernels
