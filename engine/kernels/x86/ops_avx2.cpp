// The avx2 table of the non-GEMM kernel families (x86/ops_table.h).
#include "kernels/activation.h"
#include "kernels/softmax.h"
#include "kernels/x86/ops_table.h"

namespace qvl::kernels {

const OpsTable kOpsAvx2 = {
    .layer_norm_f32 = &ref::layer_norm_f32,
    .rms_norm_f32 = &ref::rms_norm_f32,
    .gelu_tanh_f32 = &ref::gelu_tanh_f32,
    .gelu_erf_f32 = &ref::gelu_erf_f32,
    .silu_mul_f32 = &ref::silu_mul_f32,
    .add_f32 = &ref::add_f32,
    .softmax_f32 = &ref::softmax_f32,
    .rope_f32 = &ref::rope_f32,
    .pos_embed_interpolate = &ref::pos_embed_interpolate,
    .attention_run_task = &ref::attention_run_task,
};

}  // namespace qvl::kernels
