// The session's KV arena follows its precision: f32 in f32 precision (the float64 goldens stay
// exact), bf16 in every other (half the bytes), and the dry run's cost model predicts the same
// element type as the session picks.
#include <gtest/gtest.h>

#include <cstdint>

#include "runtime/cost_model.h"
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
    for (Precision precision :
         {Precision::kF32, Precision::kBF16, Precision::kBF16All, Precision::kAuto}) {
        SessionOptions so;
        so.threads = 1;
        so.ctx_size = 256;
        so.slots = 2;
        so.precision = precision;
        auto s = Session::create(test_util::tiny_model(), so);
        ASSERT_TRUE(s.ok()) << s.status().message();
        const bool f32 = s.value()->precision() == Precision::kF32;
        EXPECT_EQ(f32, precision == Precision::kF32);  // kAuto is bf16 on every tier
        const kernels::KvType want = f32 ? kernels::KvType::kF32 : kernels::KvType::kBF16;
        EXPECT_EQ(s.value()->kv_type(), want) << precision_name(precision);
        EXPECT_EQ(session_kv_type(so), want) << precision_name(precision);
        EXPECT_EQ(s.value()->kv_bytes(), f32 ? f32_bytes : f32_bytes / 2)
            << precision_name(precision);
    }
}

}  // namespace
}  // namespace qvl::runtime
