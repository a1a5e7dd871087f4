// The session's KV arena follows its precision: f32 in f32 precision (the float64 goldens stay
// exact), bf16 in every other (half the bytes), by the same rule the dry run's cost model uses
// (session_kv_type); and kAuto rounds activations to bf16 only on tiers with bf16 products.
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "runtime/kv_cache.h"
#include "runtime/session.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

TEST(SessionKv, ArenaIsBf16AndHalfTheBytesOutsideF32Precision) {
    const model::TextConfig& tc = test_util::tiny_model().config().text;
    std::uint64_t f32_bytes = 0;
    ASSERT_TRUE(KvCache::arena_bytes(tc.num_hidden_layers, tc.num_key_value_heads, tc.head_dim, 256,
                                     2, kernels::KvType::kF32, &f32_bytes));
    for (Precision precision : {Precision::kF32, Precision::kF32KvBF16, Precision::kBF16,
                                Precision::kBF16All, Precision::kAuto}) {
        SessionOptions so;
        so.threads = 1;
        so.ctx_size = 256;
        so.slots = 2;
        so.precision = precision;
        auto s = Session::create(test_util::tiny_model(), so);
        ASSERT_TRUE(s.ok()) << s.status().message();
        const bool f32 = precision == Precision::kF32;  // only when asked for
        EXPECT_EQ(f32, s.value()->precision() == Precision::kF32) << precision_name(precision);
        const kernels::KvType want = f32 ? kernels::KvType::kF32 : kernels::KvType::kBF16;
        EXPECT_EQ(s.value()->kv_type(), want) << precision_name(precision);
        EXPECT_EQ(session_kv_type(so), want) << precision_name(precision);
        EXPECT_EQ(s.value()->kv_bytes(), f32 ? f32_bytes : f32_bytes / 2)
            << precision_name(precision);
    }
}

// Without bf16 product instructions (the scalar tier here; AVX2 and AVX-512F alike) a bf16
// product is an f32 FMA over rounded operands: auto keeps f32 activations and only the KV cache
// in bf16. With them, auto rounds the activations too.
TEST(SessionKv, AutoRoundsActivationsOnlyWhereBf16ProductsAreInstructions) {
    SessionOptions so;
    so.threads = 1;
    so.ctx_size = 64;
    so.isa = kernels::Isa::kScalar;
    ASSERT_FALSE(session_kernels(so).bf16_products);
    EXPECT_EQ(session_gemm_precision(so), kernels::GemmPrecision::kF32);
    auto scalar = Session::create(test_util::tiny_model(), so);
    ASSERT_TRUE(scalar.ok()) << scalar.status().message();
    EXPECT_EQ(scalar.value()->precision(), Precision::kF32KvBF16);
    EXPECT_EQ(scalar.value()->kv_type(), kernels::KvType::kBF16);

    so.isa.reset();  // the best tier of this CPU
    auto best = Session::create(test_util::tiny_model(), so);
    ASSERT_TRUE(best.ok()) << best.status().message();
    if (session_kernels(so).bf16_products) {
        EXPECT_NE(best.value()->precision(), Precision::kF32KvBF16);
        EXPECT_EQ(session_gemm_precision(so), kernels::GemmPrecision::kBF16);
    } else {
        EXPECT_EQ(best.value()->precision(), Precision::kF32KvBF16);
    }
}

}  // namespace
}  // namespace qvl::runtime
