// Grounding answers: finding bbox_2d / point_2d objects in free text and converting the 0..1000
// coordinates to pixels; drawing them.
#include "qvl_run/grounding.h"

#include <gtest/gtest.h>

#include "qvl_run/draw_boxes.h"

namespace qvl::app {
namespace {

const std::vector<ImageSize> k1000x500 = {{1000, 500}};

TEST(Grounding, FencedArrayWithLabels) {
    const std::string answer =
        "Here you go:\n```json\n[\n  {\"bbox_2d\": [100, 200, 300, 400], \"label\": \"cat\"},\n"
        "  {\"bbox_2d\": [0, 0, 1000, 1000], \"label\": \"room\"}\n]\n```";
    const std::vector<GroundingItem> items = find_grounding(answer, k1000x500);
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].label, "cat");
    EXPECT_EQ(items[0].bbox_px, (std::vector<int>{100, 100, 300, 200}));
    EXPECT_EQ(items[1].label, "room");
    EXPECT_EQ(items[1].bbox_px, (std::vector<int>{0, 0, 1000, 500}));
    EXPECT_EQ(grounding_json({items[0]}),
              "[{\"label\": \"cat\", \"image\": 0, \"bbox_2d\": [100, 200, 300, 400], "
              "\"bbox_px\": [100, 100, 300, 200]}]");
}

TEST(Grounding, RoundsHalfAwayClampsAndOrdersCorners) {
    // 640 px wide: 1 -> 0.64 -> 1; 999 -> 639.36 -> 639; 2.5/1000*200 = 0.5 -> 1 (half away).
    const std::vector<ImageSize> sizes = {{640, 200}};
    const auto items =
        find_grounding("{\"bbox_2d\": [999, 2.5, 1, 1200], \"label\": \"x\"}", sizes);
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].bbox_px, (std::vector<int>{1, 1, 639, 200}));  // swapped, clamped
    const auto neg = find_grounding("{\"point_2d\": [-50, 500]}", sizes);
    ASSERT_EQ(neg.size(), 1u);
    EXPECT_EQ(neg[0].point_px, (std::vector<int>{0, 100}));
    EXPECT_EQ(neg[0].label, "");
}

TEST(Grounding, TruncatedAndMalformedObjectsAreSkipped) {
    const std::string answer =
        "[{\"bbox_2d\": [1, 2, 3], \"label\": \"three numbers\"}, "
        "{\"bbox_2d\": [1, 2, 3, \"4\"]}, {\"point_2d\": [10, 20], \"label\": \"ok\"}, "
        "{\"bbox_2d\": [5, 6, 7, 8], \"label\": \"cut sh";
    const auto items = find_grounding(answer, k1000x500);
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].label, "ok");
    EXPECT_EQ(items[0].point_px, (std::vector<int>{10, 10}));
    EXPECT_TRUE(find_grounding("no boxes {here} or } there {", k1000x500).empty());
    EXPECT_TRUE(
        find_grounding("{\"label\": \"a { brace\", \"bbox_2d\": [1,2,3,4]", k1000x500).empty());
}

TEST(Grounding, BracesInsideStringsDoNotSplitObjects) {
    const auto items = find_grounding(
        "{\"label\": \"sign {\\\"OPEN\\\"}\", \"bbox_2d\": [0, 0, 500, 500]}", k1000x500);
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].label, "sign {\"OPEN\"}");
}

TEST(Grounding, SeveralImagesUseTheirOwnSizes) {
    const std::vector<ImageSize> sizes = {{100, 100}, {2000, 1000}};
    const auto items = find_grounding(
        "[{\"bbox_2d\": [500, 500, 1000, 1000]}, {\"image\": 1, \"bbox_2d\": [500, 500, 1000, "
        "1000]}, {\"image_index\": 7, \"bbox_2d\": [1, 1, 2, 2]}, {\"image\": \"1\", "
        "\"bbox_2d\": [1, 1, 2, 2]}]",
        sizes);
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].image, 0);
    EXPECT_EQ(items[0].bbox_px, (std::vector<int>{50, 50, 100, 100}));
    EXPECT_EQ(items[1].image, 1);
    EXPECT_EQ(items[1].bbox_px, (std::vector<int>{1000, 500, 2000, 1000}));
}

TEST(Grounding, DrawsOutlinesInsideTheImageOnly) {
    RgbImage im{.width = 20, .height = 10, .rgb = std::vector<std::uint8_t>(20 * 10 * 3, 0)};
    GroundingItem box;
    box.bbox_px = {2, 2, 12, 8};
    GroundingItem other_image = box;
    other_image.image = 1;
    GroundingItem outside;
    outside.point_px = {19, 9};
    draw_grounding({box, other_image, outside}, 0, &im);
    const auto px = [&](int x, int y) { return im.rgb[(std::size_t(y) * 20 + x) * 3]; };
    EXPECT_NE(px(2, 2), 0);   // corner of the outline
    EXPECT_NE(px(11, 5), 0);  // right edge
    EXPECT_EQ(px(6, 5), 0);   // inside stays untouched
    EXPECT_EQ(px(0, 0), 0);
    EXPECT_NE(px(19, 9), 0);  // the point's disc, clipped at the corner
}

}  // namespace
}  // namespace qvl::app
