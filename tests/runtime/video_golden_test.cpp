// The video path through the whole model on the tiny checkpoint, against transformers' Qwen3-VL in
// float64 (tests/data/videos/make_video_model_goldens.py): the clip decoded and preprocessed by
// qvl (pixel_values are checked exact in tests/image), each temporal patch through the vision
// tower, the merger and deepstack features, the MRoPE positions of the timestamped prompt exact,
// the last logits within the image path's strict tolerance and 8 greedy tokens identical.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "image/video_preprocess.h"
#include "io/json.h"
#include "io/video.h"
#include "model/mrope.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "support/golden.h"
#include "support/reference_generate.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

constexpr double kStrict = 2e-5;  // as golden_test.cpp: f32 compute on upcast bf16 weights

const std::filesystem::path kVideos = test::test_data_dir() / "videos";

const io::JsonValue* find_case(const io::JsonValue& all, const std::string& name) {
    for (const io::JsonValue& c : all.find("cases")->items())
        if (c.find("name")->as_string() == name) return &c;
    return nullptr;
}

// The case's clip through qvl's decoder and preprocessing, with the processor's settings.
PreparedPrompt video_prompt(const io::JsonValue& c) {
    image::VideoPreprocessConfig config;
    const io::JsonValue& kw = *c.find("kwargs");
    config.base.min_pixels = kw.find("size")->find("shortest_edge")->as_int();
    config.base.max_pixels = kw.find("size")->find("longest_edge")->as_int();
    if (const io::JsonValue* n = kw.find("num_frames")) config.num_frames = n->as_int();
    auto video = io::load_video(
        kVideos / c.find("clip")->as_string(), {},
        [&](const io::VideoInfo& info) { return image::sample_frame_indices(info, config); });
    EXPECT_TRUE(video.ok()) << video.status().message();
    auto pre = image::preprocess_video(*video, config);
    EXPECT_TRUE(pre.ok()) << pre.status().message();
    PreparedPrompt prompt;
    for (const io::JsonValue& v : c.find("input_ids")->items())
        prompt.ids.push_back(std::int32_t(v.as_int()));
    prompt.images = image::video_frames_as_images(*pre);
    return prompt;
}

class VideoGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(VideoGolden, MatchesTransformers) {
    const std::string name = GetParam();
    auto cases = io::read_json_file(kVideos / "cases.json");
    ASSERT_TRUE(cases.ok()) << cases.status().message();
    const io::JsonValue* c = find_case(*cases, name);
    ASSERT_NE(c, nullptr);
    const auto golden = test::read_golden(kVideos / (name + ".model.safetensors"));
    const model::Model& m = test_util::tiny_model();
    const PreparedPrompt prompt = video_prompt(*c);
    ASSERT_FALSE(prompt.images.empty());

    // MRoPE: one t = 1 grid per temporal patch, the timestamps as text between them.
    const image::PreprocessedImage& f0 = prompt.images[0];
    const model::ImageGrid grid{1, f0.grid_h / f0.merge_size, f0.grid_w / f0.merge_size};
    const std::vector<model::ImageGrid> frames(prompt.images.size(), grid);
    auto pos = model::compute_rope_positions(prompt.ids, {}, m.config().image_token_id, frames,
                                             m.config().video_token_id);
    ASSERT_TRUE(pos.ok()) << pos.status().message();
    std::vector<std::int64_t> ours;
    for (const auto* axis : {&pos->t, &pos->h, &pos->w})
        ours.insert(ours.end(), axis->begin(), axis->end());
    EXPECT_EQ(ours, golden.at("position_ids").as_ints());

    SessionOptions so;
    so.threads = 1;
    so.ctx_size = 256;
    so.precision = Precision::kF32;  // the strict tier; other precisions are the image tests'
    auto session = Session::create(m, so);
    ASSERT_TRUE(session.ok()) << session.status().message();
    std::map<std::string, std::vector<float>> trace;
    (*session)->set_observer(
        [&](const std::string& node, const float* data, int rows, int cols, std::ptrdiff_t stride) {
            if (node.rfind("vision.", 0) != 0) return;
            for (int r = 0; r < rows; ++r)  // one graph per temporal patch: rows concatenate
                trace[node].insert(trace[node].end(), data + r * stride, data + r * stride + cols);
        });
    std::vector<float> logits;
    GenerateParams gp;
    gp.n_predict = 8;
    gp.ignore_eos = true;
    test::GenerateHooks hooks;
    hooks.after_prefill = [&](const Session& s, int slot) {
        const std::span<const float> l = s.logits(slot);
        logits.assign(l.begin(), l.end());
    };
    auto result = test::generate(**session, prompt, gp, hooks);
    ASSERT_TRUE(result.ok()) << result.status().message();

    EXPECT_LE(test::relative_error(trace["vision.merger.out"], golden.at("video_embeds").values),
              kStrict);
    for (int level = 0; level < 3; ++level) {
        const std::string node = "vision.deepstack." + std::to_string(level) + ".out";
        EXPECT_LE(test::relative_error(trace[node],
                                       golden.at("deepstack_" + std::to_string(level)).values),
                  kStrict)
            << node;
    }
    const double logits_err = test::relative_error(logits, golden.at("logits_last").values);
    EXPECT_LE(logits_err, kStrict);
    RecordProperty("logits_err", std::to_string(logits_err));
    std::vector<std::int64_t> tokens(result->tokens.begin(), result->tokens.end());
    EXPECT_EQ(tokens, golden.at("generated_ids").as_ints());
}

INSTANTIATE_TEST_SUITE_P(Clips, VideoGolden, ::testing::Values("gif_fps2", "bt709_num5"));

}  // namespace
}  // namespace qvl::runtime
