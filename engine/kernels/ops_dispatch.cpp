// Public entry points of the non-GEMM kernel families: each forwards to the Isa's table.
#include <algorithm>

#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/attention_plan.h"
#include "kernels/norm.h"
#include "kernels/pos_embed.h"
#include "kernels/rope.h"
#include "kernels/softmax.h"
#include "kernels/x86/ops_table.h"

namespace qvl::kernels {

const OpsTable kOpsScalar = {
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

const OpsTable& ops_table(Isa isa) {
    switch (isa) {
        case Isa::kScalar:
            return kOpsScalar;
        case Isa::kAvx2:
            return kOpsAvx2;
        case Isa::kAvx512:
        case Isa::kAvx512Bf16:
            return kOpsAvx512;
    }
    return kOpsScalar;
}

void layer_norm_f32(const LayerNormArgs& args, Isa isa) { ops_table(isa).layer_norm_f32(args); }
void rms_norm_f32(const RmsNormArgs& args, Isa isa) { ops_table(isa).rms_norm_f32(args); }

void gelu_tanh_f32(const float* x, float* y, std::int64_t n, Isa isa) {
    ops_table(isa).gelu_tanh_f32(x, y, n);
}
void gelu_erf_f32(const float* x, float* y, std::int64_t n, Isa isa) {
    ops_table(isa).gelu_erf_f32(x, y, n);
}
void silu_mul_f32(const float* gate, const float* up, float* y, std::int64_t n, Isa isa) {
    ops_table(isa).silu_mul_f32(gate, up, y, n);
}
void add_f32(const float* a, const float* b, float* y, std::int64_t n, Isa isa) {
    ops_table(isa).add_f32(a, b, y, n);
}

void softmax_f32(float* x, int rows, int cols, std::ptrdiff_t stride, Isa isa) {
    ops_table(isa).softmax_f32(x, rows, cols, stride);
}

void rope_f32(const RopeArgs& args, Isa isa) { ops_table(isa).rope_f32(args); }

void pos_embed_interpolate(const PosEmbedArgs& args, Isa isa) {
    ops_table(isa).pos_embed_interpolate(args);
}

int attention_num_tasks(const AttentionArgs& a, int n_threads) {
    const int n_kvh = attention_kv_heads(a);
    if (n_kvh <= 0 || a.n_q <= 0) return 0;
    const int granule = attention_row_granule(a);
    const int max_blocks = (a.n_q + granule - 1) / granule;
    // Few, large tasks: each task of the flash kernels reads (and for bf16 converts) all the
    // keys of its head, so every extra row block per head costs another pass over K and V
    // (at N = 3520, 256-row blocks spent 15 % of the time there; 4096-row blocks run 1.25x
    // faster). Still at least two tasks per thread, so many-core machines split the rows.
    int blocks = std::max(1, (a.n_q + 4095) / 4096);
    while (blocks < max_blocks && blocks * n_kvh < 2 * n_threads) ++blocks;
    return blocks * n_kvh;
}

void attention_run_task(const AttentionArgs& args, int task, int num_tasks, Isa isa) {
    // bf16 products pay off once a flash block has more than a few items; decode stays f32.
    const int group = args.n_heads / std::max(1, attention_kv_heads(args));
    if (isa == Isa::kAvx512Bf16 && args.round_bf16 && args.n_q * group > 4 &&
        avx512bf16::attention_supported(args)) {
        return avx512bf16::attention_run_task(args, task, num_tasks);
    }
    ops_table(isa).attention_run_task(args, task, num_tasks);
}

void attention(const AttentionArgs& args, Isa isa) {
    const int n = attention_num_tasks(args, 1);
    for (int t = 0; t < n; ++t) attention_run_task(args, t, n, isa);
}

}  // namespace qvl::kernels
