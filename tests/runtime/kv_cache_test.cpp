// The KV arena: its size, the strides of the view the graph builders write through (every
// (layer, k|v, head, position, dim) slot distinct and inside the allocation), the two counters
// (filled positions and the M-RoPE delta) and the refusal of a size that overflows.
#include "runtime/kv_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace qvl::runtime {
namespace {

TEST(KvCache, SizeAndViewStrides) {
    const int layers = 3, heads = 2, head_dim = 8, ctx = 5;
    base::Result<KvCache> kv = KvCache::create(layers, heads, head_dim, ctx);
    ASSERT_TRUE(kv.ok()) << kv.status().message();
    KvCache& c = kv.value();
    EXPECT_EQ(c.bytes(), std::size_t(2) * layers * heads * ctx * head_dim * sizeof(float));
    EXPECT_EQ(c.capacity(), ctx);
    EXPECT_EQ(c.size(), 0);
    const graph::KvCacheView view = c.view();
    EXPECT_EQ(view.head_stride, ctx * head_dim);
    EXPECT_EQ(view.layer_stride, 2 * heads * ctx * head_dim);
    const graph::KvLayerView l1 = view.layer(1);
    EXPECT_EQ(l1.k, view.base + view.layer_stride);
    EXPECT_EQ(l1.v, l1.k + heads * ctx * head_dim);
    EXPECT_EQ(l1.head_stride, view.head_stride);
}

TEST(KvCache, EverySlotIsDistinctAndInside) {
    const int layers = 2, heads = 3, head_dim = 4, ctx = 7;
    base::Result<KvCache> kv = KvCache::create(layers, heads, head_dim, ctx);
    ASSERT_TRUE(kv.ok());
    const graph::KvCacheView view = kv.value().view();
    const float* begin = view.base;
    const float* end = view.base + kv.value().bytes() / sizeof(float);
    float value = 0;
    auto for_each_slot = [&](auto&& fn) {
        for (int l = 0; l < layers; ++l) {
            const graph::KvLayerView lv = view.layer(l);
            for (float* base : {lv.k, lv.v}) {
                for (int h = 0; h < heads; ++h) {
                    for (int p = 0; p < ctx; ++p) {
                        for (int d = 0; d < head_dim; ++d) {
                            fn(base + h * lv.head_stride + p * head_dim + d);
                        }
                    }
                }
            }
        }
    };
    for_each_slot([&](float* slot) {
        ASSERT_TRUE(slot >= begin && slot < end);
        *slot = value++;
    });
    const std::size_t n_floats = kv.value().bytes() / sizeof(float);
    EXPECT_EQ(value, float(n_floats));  // the slots tile the buffer
    value = 0;
    for_each_slot([&](float* slot) { EXPECT_EQ(*slot, value++); });
}

TEST(KvCache, CountersAdvanceAndClear) {
    base::Result<KvCache> kv = KvCache::create(1, 1, 16, 64);
    ASSERT_TRUE(kv.ok());
    KvCache& c = kv.value();
    c.advance(10);
    EXPECT_EQ(c.size(), 10);
    EXPECT_EQ(c.next_rope_position(), 10);
    c.set_rope_delta(-6);  // after an image of 4x2 merged tokens the positions lag the slots
    EXPECT_EQ(c.rope_delta(), -6);
    EXPECT_EQ(c.next_rope_position(), 4);
    c.advance(1);
    EXPECT_EQ(c.size(), 11);
    EXPECT_EQ(c.next_rope_position(), 5);
    c.clear();
    EXPECT_EQ(c.size(), 0);
    EXPECT_EQ(c.rope_delta(), 0);
    EXPECT_EQ(c.next_rope_position(), 0);
    EXPECT_EQ(c.capacity(), 64);
}

TEST(KvCache, OverflowingSizeIsRefusedWithTheNumber) {
    base::Result<KvCache> kv = KvCache::create(1 << 20, 1 << 10, 1 << 10, 1 << 30);
    ASSERT_FALSE(kv.ok());
    EXPECT_EQ(kv.status().code(), base::ErrorCode::kResourceExhausted);
    EXPECT_NE(kv.status().message().find("overflows"), std::string::npos) << kv.status().message();
    EXPECT_NE(kv.status().message().find(std::to_string(1 << 30)), std::string::npos)
        << kv.status().message();
}

}  // namespace
}  // namespace qvl::runtime
