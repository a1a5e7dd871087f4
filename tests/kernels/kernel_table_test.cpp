// The KernelTable of each tier: complete, built once, with the tier reuse and the bf16 rules
// kernel_table.h promises; and the tier choice (best_isa, resolve_isa).
#include "kernels/kernel_table.h"

#include <gtest/gtest.h>

#include "kernels/isa.h"

namespace qvl::kernels {
namespace {

TEST(KernelTable, EveryTierHasEveryEntry) {
    for (Isa isa : all_isas()) {
        const KernelTable& t = kernels_for(isa);
        SCOPED_TRACE(isa_name(isa));
        EXPECT_EQ(t.isa, isa);
        EXPECT_EQ(&t, &kernels_for(isa)) << "built once";
        EXPECT_NE(t.layer_norm_f32, nullptr);
        EXPECT_NE(t.rms_norm_f32, nullptr);
        EXPECT_NE(t.gelu_tanh_f32, nullptr);
        EXPECT_NE(t.gelu_erf_f32, nullptr);
        EXPECT_NE(t.silu_mul_f32, nullptr);
        EXPECT_NE(t.add_f32, nullptr);
        EXPECT_NE(t.softmax_f32, nullptr);
        EXPECT_NE(t.rope_f32, nullptr);
        EXPECT_NE(t.pos_embed_interpolate, nullptr);
        EXPECT_NE(t.resize_vertical_u8, nullptr);
        EXPECT_NE(t.resize_horizontal_rgb_u8, nullptr);
        EXPECT_NE(t.patch_normalize_u8, nullptr);
        EXPECT_NE(t.copy_f32_streaming, nullptr);
        EXPECT_NE(t.attention_f32_task, nullptr);
        for (const GemmKernels* g : {&t.gemm_f32, &t.gemm_bf16}) {
            EXPECT_NE(g->gemm_tile, nullptr);
            EXPECT_NE(g->gemv_tile, nullptr);
        }
        // The int8 slot stays empty until its kernels land.
        EXPECT_EQ(t.gemm_q8.gemm_tile, nullptr);
        EXPECT_EQ(t.gemm_q8.gemv_tile, nullptr);
        // Packed tiers say how they block; the scalar loops do not pack.
        EXPECT_EQ(t.gemm_f32.blocking.mr > 0, isa != Isa::kScalar);
        EXPECT_EQ(&t.gemm_kernels(GemmPrecision::kF32), &t.gemm_f32);
        EXPECT_EQ(&t.gemm_kernels(GemmPrecision::kBF16), &t.gemm_bf16);
    }
}

TEST(KernelTable, Bf16RulesAndTierReuse) {
    const KernelTable& avx512 = kernels_for(Isa::kAvx512);
    const KernelTable& bf16 = kernels_for(Isa::kAvx512Bf16);
    // Only the bf16 tier has bf16 products; elsewhere kBF16 rounds and runs the f32 tiles.
    for (Isa isa : all_isas()) {
        const KernelTable& t = kernels_for(isa);
        SCOPED_TRACE(isa_name(isa));
        EXPECT_EQ(t.bf16_products, isa == Isa::kAvx512Bf16);
        EXPECT_EQ(t.attention_bf16_task != nullptr, isa == Isa::kAvx512Bf16);
        EXPECT_EQ(t.attention_bf16_supports != nullptr, isa == Isa::kAvx512Bf16);
        if (!t.bf16_products) {
            EXPECT_EQ(t.gemm_bf16.gemm_tile, t.gemm_f32.gemm_tile);
            EXPECT_EQ(t.gemm_bf16.gemv_tile, t.gemm_f32.gemv_tile);
        }
    }
    // avx512bf16 reuses every avx512 entry except the bf16 ones.
    EXPECT_EQ(bf16.gemm_f32.gemm_tile, avx512.gemm_f32.gemm_tile);
    EXPECT_EQ(bf16.gemm_f32.gemv_tile, avx512.gemm_f32.gemv_tile);
    EXPECT_NE(bf16.gemm_bf16.gemm_tile, avx512.gemm_bf16.gemm_tile);
    EXPECT_NE(bf16.gemm_bf16.gemv_tile, avx512.gemm_bf16.gemv_tile);
    EXPECT_EQ(bf16.attention_f32_task, avx512.attention_f32_task);
    EXPECT_EQ(bf16.layer_norm_f32, avx512.layer_norm_f32);
    EXPECT_EQ(bf16.rope_f32, avx512.rope_f32);
    // The image kernels of every SIMD tier are the AVX2 ones.
    EXPECT_EQ(avx512.resize_vertical_u8, kernels_for(Isa::kAvx2).resize_vertical_u8);
    EXPECT_EQ(bf16.patch_normalize_u8, kernels_for(Isa::kAvx2).patch_normalize_u8);
    EXPECT_NE(kernels_for(Isa::kScalar).patch_normalize_u8,
              kernels_for(Isa::kAvx2).patch_normalize_u8);
}

TEST(KernelTable, ResolveIsaClampsToTheCpu) {
    const Isa best = best_isa();
    EXPECT_TRUE(isa_supported(best));
    EXPECT_EQ(&best_table(), &kernels_for(best));
    for (Isa isa : all_isas()) {
        SCOPED_TRACE(isa_name(isa));
        const Isa got = resolve_isa(isa);
        EXPECT_TRUE(isa_supported(got));
        EXPECT_EQ(got, int(isa) <= int(best) ? isa : best);
    }
    EXPECT_EQ(resolve_isa(Isa::kScalar), Isa::kScalar);
}

}  // namespace
}  // namespace qvl::kernels
