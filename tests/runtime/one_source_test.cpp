// Facts computed in exactly one place: the fits-the-context rule, the KV arena's size, and the
// per-image visual-token budget that both the preprocessing and the session's arena follow.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "image/image_preprocess.h"
#include "model/model.h"
#include "runtime/generate.h"
#include "runtime/kv_cache.h"
#include "runtime/session.h"
#include "support/golden.h"
#include "support/tiny_model.h"

namespace qvl::runtime {
namespace {

using test::tiny_model;

TEST(ContextFits, BoundaryAndMessage) {
    EXPECT_TRUE(check_context_fits(0, 16, 16, "x").ok());
    EXPECT_TRUE(check_context_fits(10, 6, 16, "x").ok());
    EXPECT_TRUE(check_context_fits(16, 0, 16, "x").ok());
    const base::Status over = check_context_fits(10, 7, 16, "the prompt");
    EXPECT_EQ(over.code(), base::ErrorCode::kOutOfRange);
    EXPECT_EQ(over.message(),
              "the prompt (7 tokens) does not fit the context of 16 tokens (10 already used)");
    EXPECT_EQ(check_context_fits(0, 17, 16, "the prompt").message(),
              "the prompt (17 tokens) does not fit the context of 16 tokens");
    // Sums that would overflow are refused, not wrapped.
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    EXPECT_FALSE(check_context_fits(kMax, kMax, 16, "x").ok());
    EXPECT_FALSE(check_context_fits(1, kMax, kMax, "x").ok());
    EXPECT_FALSE(check_context_fits(0, -1, 16, "x").ok());
}

TEST(KvBytes, MatchesTheArenaCreateAllocates) {
    std::uint64_t bytes = 0;
    ASSERT_TRUE(KvCache::arena_bytes(3, 2, 16, 40, 1, kernels::KvType::kF32, &bytes));
    EXPECT_EQ(bytes, 2u * 3 * 2 * 16 * 40 * sizeof(float));
    auto kv = KvCache::create(3, 2, 16, 40);
    ASSERT_TRUE(kv.ok());
    EXPECT_EQ(kv->bytes(), bytes);
    EXPECT_FALSE(KvCache::arena_bytes(1 << 30, 1 << 30, 1 << 30, 1 << 30, 1, kernels::KvType::kBF16,
                                      &bytes));
    EXPECT_FALSE(KvCache::create(1 << 30, 1 << 30, 1 << 30, 1 << 30).ok());
}

TEST(VisualTokens, OneCount) {
    EXPECT_EQ(image::visual_token_count(1, 4, 6, 2), 6);
    EXPECT_EQ(image::visual_token_count(2, 4, 4, 2), 8);
    image::PreprocessConfig pp;
    pp.patch_size = 16;
    pp.merge_size = 2;
    pp.max_pixels = 32 * 32 * 10 + 5;
    EXPECT_EQ(image::pixels_per_visual_token(pp), 32 * 32);
    EXPECT_EQ(image::max_visual_tokens(pp), 10);
}

// The preprocessing settings and the session's arena come from one SessionOptions: for every
// budget, the session is sized for exactly the largest image the settings can produce, and
// such an image encodes. The default budget (4096 tokens, the cap) is encoded once: a second
// encode of the same largest image tests nothing new and is this suite's slowest step.
TEST(ImageBudget, PreprocessAndSessionAgree) {
    const model::Model& m = tiny_model();
    std::vector<int> encoded_budgets;
    for (const auto& [min_tokens, max_tokens] :
         {std::pair{0, 0}, std::pair{0, 4}, std::pair{8, 0}, std::pair{64, 16}}) {
        SCOPED_TRACE(testing::Message() << "min " << min_tokens << " max " << max_tokens);
        SessionOptions so;
        so.threads = 1;
        so.ctx_size = 4096;
        so.min_image_tokens = min_tokens;
        so.max_image_tokens = max_tokens;
        const image::PreprocessConfig pp = effective_preprocess(m, so);
        EXPECT_LE(pp.min_pixels, pp.max_pixels);
        auto session = Session::create(m, so);
        ASSERT_TRUE(session.ok()) << session.status().message();
        EXPECT_EQ((*session)->max_image_tokens(), image::max_visual_tokens(pp));
        EXPECT_EQ((*session)->max_image_tokens(),
                  max_tokens > 0 ? max_tokens : default_max_image_tokens(m));

        // The largest image the settings allow: a big square is scaled down to the maximum.
        io::Image big{.width = 2048, .height = 2048};
        big.rgb.assign(std::size_t(big.width) * big.height * 3, 128);
        auto pre = image::preprocess_image(big, pp);
        ASSERT_TRUE(pre.ok()) << pre.status().message();
        EXPECT_LE(pre->num_image_tokens(), (*session)->max_image_tokens());
        if (std::ranges::count(encoded_budgets, (*session)->max_image_tokens()) > 0) continue;
        encoded_budgets.push_back((*session)->max_image_tokens());
        EXPECT_TRUE((*session)->encode_image(pre.value()).ok());
    }
}

}  // namespace
}  // namespace qvl::runtime
