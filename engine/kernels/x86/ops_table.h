// Internal to kernels/: one table of entry points per Isa for the non-GEMM kernel families
// (norm.h, activation.h, softmax.h, rope.h, pos_embed.h, attention.h). The public functions
// dispatch through ops_table(isa); each ISA translation unit (x86/ops_<isa>.cpp) defines its
// table from the simd/ templates. A tier may reuse a lower tier's entry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/isa.h"
#include "kernels/norm.h"
#include "kernels/pos_embed.h"
#include "kernels/rope.h"

namespace qvl::kernels {

struct OpsTable {
    void (*layer_norm_f32)(const LayerNormArgs&);
    void (*rms_norm_f32)(const RmsNormArgs&);
    void (*gelu_tanh_f32)(const float*, float*, std::int64_t);
    void (*gelu_erf_f32)(const float*, float*, std::int64_t);
    void (*silu_mul_f32)(const float*, const float*, float*, std::int64_t);
    void (*add_f32)(const float*, const float*, float*, std::int64_t);
    void (*softmax_f32)(float*, int, int, std::ptrdiff_t);
    void (*rope_f32)(const RopeArgs&);
    void (*pos_embed_interpolate)(const PosEmbedArgs&);
    void (*attention_run_task)(const AttentionArgs&, int, int);
};

extern const OpsTable kOpsScalar;  // ops_dispatch.cpp: the references
extern const OpsTable kOpsAvx2;    // x86/ops_avx2.cpp
extern const OpsTable kOpsAvx512;  // x86/ops_avx512.cpp (also used by kAvx512Bf16)

// Hand-written AVX2 flash attention (x86/attention_avx2.cpp).
namespace avx2 {
void attention_run_task(const AttentionArgs& args, int task, int num_tasks);
}  // namespace avx2
// Hand-written AVX-512 attention (x86/attention_avx512.cpp).
namespace avx512 {
void attention_run_task(const AttentionArgs& args, int task, int num_tasks);
}  // namespace avx512
// The same with bf16 products (x86/attention_avx512bf16.cpp) for the shapes it supports.
namespace avx512bf16 {
bool attention_supported(const AttentionArgs& args);
void attention_run_task(const AttentionArgs& args, int task, int num_tasks);
}  // namespace avx512bf16

// The table for isa; the caller has checked isa_supported(isa).
const OpsTable& ops_table(Isa isa);

}  // namespace qvl::kernels
