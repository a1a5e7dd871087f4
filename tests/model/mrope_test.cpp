// MRoPE positions against a reference written here from Qwen3VLModel.get_rope_index: text
// advances every axis by one; an image of t x h x w merged tokens starting after position s-1
// gets (s + t_i, s + row, s + col); the text after it resumes at max + 1; rope_delta =
// max + 1 - n_tokens.
#include "model/mrope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace qvl::model {
namespace {

constexpr std::int32_t kImage = 99;

struct Expected {
    std::vector<std::int32_t> t, h, w;
    std::int64_t delta = 0;
};

// Builds the prompt "text, image, text, image, ..." and the positions it must get, segment by
// segment: text_runs[i] text tokens, then images[i] (if any).
std::vector<std::int32_t> build(const std::vector<int>& text_runs,
                                const std::vector<ImageGrid>& images, Expected* want) {
    std::vector<std::int32_t> ids;
    std::int64_t st = 0;
    for (std::size_t seg = 0; seg < text_runs.size(); ++seg) {
        for (int i = 0; i < text_runs[seg]; ++i) {
            ids.push_back(1000 + std::int32_t(ids.size()));
            want->t.push_back(std::int32_t(st));
            want->h.push_back(std::int32_t(st));
            want->w.push_back(std::int32_t(st));
            ++st;
        }
        if (seg >= images.size()) continue;
        const ImageGrid& g = images[seg];
        for (int ti = 0; ti < g.t; ++ti) {
            for (int r = 0; r < g.h; ++r) {
                for (int c = 0; c < g.w; ++c) {
                    ids.push_back(kImage);
                    want->t.push_back(std::int32_t(st + ti));
                    want->h.push_back(std::int32_t(st + r));
                    want->w.push_back(std::int32_t(st + c));
                }
            }
        }
        st += std::max({g.t, g.h, g.w});
    }
    want->delta = st - std::int64_t(ids.size());
    return ids;
}

void expect_positions(const std::vector<int>& text_runs, const std::vector<ImageGrid>& images) {
    Expected want;
    const std::vector<std::int32_t> ids = build(text_runs, images, &want);
    base::Result<RopePositions> got = compute_rope_positions(ids, images, kImage);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got.value().t, want.t);
    EXPECT_EQ(got.value().h, want.h);
    EXPECT_EQ(got.value().w, want.w);
    EXPECT_EQ(got.value().rope_delta, want.delta);
}

TEST(Mrope, TextOnlyCountsUpOnEveryAxis) {
    const std::vector<std::int32_t> ids = {5, 6, 7, 8};
    base::Result<RopePositions> p = compute_rope_positions(ids, {}, kImage);
    ASSERT_TRUE(p.ok());
    const std::vector<std::int32_t> want = {0, 1, 2, 3};
    EXPECT_EQ(p.value().t, want);
    EXPECT_EQ(p.value().h, want);
    EXPECT_EQ(p.value().w, want);
    EXPECT_EQ(p.value().rope_delta, 0);
    expect_positions({0}, {});
}

TEST(Mrope, OneImage) {
    // 3 text tokens, a 2 x 3 grid, 2 text tokens: by hand, image rows are 3,3,3,4,4,4 on h and
    // 3,4,5,3,4,5 on w, then text resumes at 6; 11 tokens reach position 7: delta -3.
    const std::vector<ImageGrid> grid = {{.t = 1, .h = 2, .w = 3}};
    const std::vector<std::int32_t> ids = {1,      2,      3,      kImage, kImage, kImage,
                                           kImage, kImage, kImage, 4,      5};
    base::Result<RopePositions> p = compute_rope_positions(ids, grid, kImage);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p.value().t, (std::vector<std::int32_t>{0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7}));
    EXPECT_EQ(p.value().h, (std::vector<std::int32_t>{0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7}));
    EXPECT_EQ(p.value().w, (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7}));
    EXPECT_EQ(p.value().rope_delta, -3);
    expect_positions({3, 2}, grid);
    expect_positions({0, 0}, {{.t = 1, .h = 5, .w = 1}});  // the image first and last, tall
}

TEST(Mrope, TwoImagesAndWideGrids) {
    expect_positions({4, 3, 5}, {{.t = 1, .h = 2, .w = 2}, {.t = 1, .h = 3, .w = 7}});
    expect_positions({1, 1, 1}, {{.t = 1, .h = 1, .w = 1}, {.t = 1, .h = 4, .w = 2}});
    expect_positions({2, 1}, {{.t = 2, .h = 2, .w = 3}});  // two temporal patches
}

TEST(Mrope, DecodePositionsFollowTheDelta) {
    // A decode token at cache index c is at c + rope_delta: right after the prompt that is the
    // prompt's max position + 1.
    Expected want;
    const std::vector<ImageGrid> grids = {{.t = 1, .h = 4, .w = 6}};
    const std::vector<std::int32_t> ids = build({5, 3}, grids, &want);
    base::Result<RopePositions> p = compute_rope_positions(ids, grids, kImage);
    ASSERT_TRUE(p.ok());
    const std::int32_t max_pos =
        std::max({*std::max_element(p.value().t.begin(), p.value().t.end()),
                  *std::max_element(p.value().h.begin(), p.value().h.end()),
                  *std::max_element(p.value().w.begin(), p.value().w.end())});
    EXPECT_EQ(std::int64_t(ids.size()) + p.value().rope_delta, max_pos + 1);
}

TEST(Mrope, MismatchedRunsAreRefused) {
    const std::vector<ImageGrid> grid = {{.t = 1, .h = 2, .w = 2}};
    struct Case {
        std::vector<std::int32_t> ids;
        std::vector<ImageGrid> grids;
        const char* fragment;
    };
    const Case cases[] = {
        {{1, kImage, kImage, kImage, 2}, grid, "needs a run of 4 image tokens at index 1"},
        {{1, kImage, kImage, kImage, kImage, kImage}, grid, "needs a run of 4"},
        {{1, kImage, kImage, kImage}, grid, "needs a run of 4"},
        {{1, kImage, kImage, kImage, kImage}, {}, "more image-token runs than the 0 images"},
        {{1, 2}, grid, "1 images given but the prompt has 0 image-token runs"},
    };
    for (const Case& c : cases) {
        base::Result<RopePositions> p = compute_rope_positions(c.ids, c.grids, kImage);
        ASSERT_FALSE(p.ok()) << c.fragment;
        EXPECT_EQ(p.status().code(), base::ErrorCode::kInvalidArgument);
        EXPECT_NE(p.status().message().find(c.fragment), std::string::npos) << p.status().message();
    }
}

}  // namespace
}  // namespace qvl::model
