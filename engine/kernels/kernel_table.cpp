// The KernelTable of every tier, each built once on first use, and the attention members.
// Tier reuse and the bf16 rules are written here, in one place (see kernel_table.h).
#include "kernels/kernel_table.h"

#include <algorithm>

#include "kernels/attention_plan.h"
#include "kernels/gemm_internal.h"
#include "kernels/x86/tier_entries.h"

namespace qvl::kernels {
namespace {

constexpr VectorKernels kVectorRef = {
    .layer_norm_f32 = &ref::layer_norm_f32,
    .rms_norm_f32 = &ref::rms_norm_f32,
    .gelu_tanh_f32 = &ref::gelu_tanh_f32,
    .gelu_erf_f32 = &ref::gelu_erf_f32,
    .silu_mul_f32 = &ref::silu_mul_f32,
    .add_f32 = &ref::add_f32,
    .softmax_f32 = &ref::softmax_f32,
    .rope_f32 = &ref::rope_f32,
    .pos_embed_interpolate = &ref::pos_embed_interpolate,
};

constexpr ImageKernels kImageRef = {
    .resize_vertical_u8 = &ref::resize_vertical_u8,
    .resize_horizontal_rgb_u8 = &ref::resize_horizontal_rgb_u8,
    .patch_normalize_u8 = &ref::patch_normalize_u8,
    .copy_f32_streaming = &ref::copy_f32_streaming,
};

constexpr ImageKernels kImageAvx2 = {
    .resize_vertical_u8 = &avx2::resize_vertical_u8,
    .resize_horizontal_rgb_u8 = &avx2::resize_horizontal_rgb_u8,
    .patch_normalize_u8 = &avx2::patch_normalize_u8,
    .copy_f32_streaming = &avx2::copy_f32_streaming,
};

KernelTable make_table(const VectorKernels& vector, const ImageKernels& image) {
    KernelTable t;
    static_cast<VectorKernels&>(t) = vector;
    static_cast<ImageKernels&>(t) = image;
    return t;
}

KernelTable scalar_table() {
    KernelTable t = make_table(kVectorRef, kImageRef);
    t.isa = Isa::kScalar;
    // The portable loops round the operands themselves for kBF16.
    t.gemm_f32 = {.gemm_tile = &detail::gemm_tile_scalar, .gemv_tile = &detail::gemv_tile_scalar};
    t.gemm_bf16 = t.gemm_f32;
    t.bf16_products = false;
    t.attention_f32_task = &ref::attention_run_task;
    t.gemm_f32.isa = t.gemm_bf16.isa = t.isa;
    return t;
}

KernelTable avx2_table() {
    KernelTable t = make_table(avx2::kVectorKernels, kImageAvx2);
    t.isa = Isa::kAvx2;
    t.gemm_f32 = avx2::kGemmKernels;
    // No bf16 products: the tiles round A (and f32 weights) to bf16 and multiply in f32.
    t.gemm_bf16 = t.gemm_f32;
    t.bf16_products = false;
    t.attention_f32_task = &avx2::attention_run_task;  // round_bf16 runs in f32 here
    t.gemm_f32.isa = t.gemm_bf16.isa = t.isa;
    return t;
}

KernelTable avx512_table() {
    // The image kernels stay AVX2: load/shuffle/store bound, little gain from 512-bit vectors.
    KernelTable t = make_table(avx512::kVectorKernels, kImageAvx2);
    t.isa = Isa::kAvx512;
    t.gemm_f32 = avx512::kGemmKernels;
    // No bf16 products: as on AVX2, rounded operands through the f32 tiles.
    t.gemm_bf16 = t.gemm_f32;
    t.bf16_products = false;
    t.attention_f32_task = &avx512::attention_run_task;  // round_bf16 runs in f32 here
    t.gemm_f32.isa = t.gemm_bf16.isa = t.isa;
    return t;
}

KernelTable avx512bf16_table() {
    // Every avx512 entry, plus bf16 products for kBF16 GEMM and round_bf16 attention.
    KernelTable t = avx512_table();
    t.isa = Isa::kAvx512Bf16;
    t.gemm_bf16 = avx512bf16::kGemmKernels;
    t.bf16_products = true;
    t.attention_bf16_task = &avx512bf16::attention_run_task;
    t.attention_bf16_supports = &avx512bf16::attention_supported;
    t.gemm_f32.isa = t.gemm_bf16.isa = t.isa;
    return t;
}

}  // namespace

const KernelTable& kernels_for(Isa isa) {
    switch (isa) {
        case Isa::kScalar:
            break;
        case Isa::kAvx2: {
            static const KernelTable table = avx2_table();
            return table;
        }
        case Isa::kAvx512: {
            static const KernelTable table = avx512_table();
            return table;
        }
        case Isa::kAvx512Bf16: {
            static const KernelTable table = avx512bf16_table();
            return table;
        }
    }
    static const KernelTable table = scalar_table();
    return table;
}

const KernelTable& best_table() { return kernels_for(best_isa()); }

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

void KernelTable::attention_task(const AttentionArgs& args, int task, int num_tasks) const {
    // The choice depends on round_bf16, the tier and the shape only, never on n_q: a row must
    // come out the same in a prefill, a chunk of one or a decode step (row invariance).
    if (args.round_bf16 && attention_bf16_task != nullptr && attention_bf16_supports(args)) {
        return attention_bf16_task(args, task, num_tasks);
    }
    attention_f32_task(args, task, num_tasks);
}

}  // namespace qvl::kernels
