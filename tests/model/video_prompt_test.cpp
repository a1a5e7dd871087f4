// The prompt of a video turn, token for token as Qwen3VLProcessor builds it: the chat template's
// video wrapper replaced by per-temporal-patch "<t seconds>" text and video pads, tokenized with
// the tiny model's tokenizer (tests/data/videos/cases.json, make_video_goldens.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "image/video_preprocess.h"
#include "io/json.h"
#include "text/tokenizer.h"

namespace qvl::image {
namespace {

const std::filesystem::path kData(QVL_TEST_DATA_DIR);

TEST(VideoPrompt, IdsMatchTheProcessor) {
    auto tokenizer = text::Tokenizer::load(kData / "tiny-qwen3vl");
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
    auto cases = io::read_json_file(kData / "videos" / "cases.json");
    ASSERT_TRUE(cases.ok()) << cases.status().message();
    for (const io::JsonValue& c : cases->find("cases")->items()) {
        SCOPED_TRACE(c.find("name")->as_string());
        PreprocessedVideo video;
        const auto& grid = c.find("grid_thw")->items();
        video.grid_t = int(grid[0].as_int());
        video.grid_h = int(grid[1].as_int());
        video.grid_w = int(grid[2].as_int());
        for (const io::JsonValue& t : c.find("timestamps")->items())
            video.timestamps.push_back(t.as_double());
        auto prompt = expand_video_wrappers(c.find("template_text")->as_string(), {&video, 1});
        ASSERT_TRUE(prompt.ok()) << prompt.status().message();
        auto ids = tokenizer->encode(*prompt);
        ASSERT_TRUE(ids.ok()) << ids.status().message();
        std::vector<std::int32_t> want;
        for (const io::JsonValue& v : c.find("input_ids")->items())
            want.push_back(std::int32_t(v.as_int()));
        EXPECT_EQ(*ids, want);
    }
}

TEST(VideoPrompt, PlaceholderCountMustMatch) {
    PreprocessedVideo video;
    video.grid_t = 1;
    video.grid_h = video.grid_w = 2;
    video.timestamps = {0.25};
    EXPECT_EQ(video_placeholder_text(video),
              "<0.2 seconds><|vision_start|><|video_pad|><|vision_end|>");  // half to even
    EXPECT_FALSE(expand_video_wrappers("no video here", {&video, 1}).ok());
    const std::string two =
        "<|vision_start|><|video_pad|><|vision_end|>x"
        "<|vision_start|><|video_pad|><|vision_end|>";
    EXPECT_FALSE(expand_video_wrappers(two, {&video, 1}).ok());
}

}  // namespace
}  // namespace qvl::image
