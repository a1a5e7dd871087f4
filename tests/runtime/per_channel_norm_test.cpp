// A model whose preprocessor has per-channel mean/std cannot use the fused patch embedding (one
// normalisation table for all channels). Preprocessing then builds pixel_values even when the
// caller asked for none (as qvl-run does), and the vision tower takes the unfused path: checked
// against the float64 oracle (tests/data/per_channel_norm) with the settings qvl-run uses.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/model.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "support/golden.h"
#include "support/reference_generate.h"
#include "support/scratch_dir.h"

namespace qvl::runtime {
namespace {

using test::generate;

constexpr double kStrict = 2e-5;

// The tiny checkpoint with the fixture's preprocessor_config.json, as symlinks in a scratch dir.
std::filesystem::path per_channel_model(const testing::ScratchDir& dir) {
    const std::filesystem::path tiny = test::test_data_dir() / "tiny-qwen3vl";
    for (const auto& e : std::filesystem::directory_iterator(tiny)) {
        if (e.path().filename() == "preprocessor_config.json") continue;
        std::filesystem::create_symlink(e.path(), dir.path() / e.path().filename());
    }
    std::filesystem::copy_file(test::test_data_dir() / "per_channel_norm/preprocessor_config.json",
                               dir.path() / "preprocessor_config.json");
    return dir.path();
}

std::vector<text::ChatMessage> describe_image() {
    const std::string image = (test::test_data_dir() / "golden/images/img_64x64.png").string();
    return {{.role = "user",
             .parts = {{.kind = text::ChatPart::Kind::kImage, .image_path = image},
                       {.kind = text::ChatPart::Kind::kText, .text = "Describe this image."}}}};
}

TEST(PerChannelNormalization, DecidedByTheConfig) {
    image::PreprocessConfig pp;
    EXPECT_TRUE(image::fused_patch_embed_possible(pp));
    pp.image_mean[2] = 0.4f;
    EXPECT_FALSE(image::fused_patch_embed_possible(pp));
    pp = {};
    pp.image_std[1] = 0.3f;
    EXPECT_FALSE(image::fused_patch_embed_possible(pp));
}

TEST(PerChannelNormalization, UnfusedPathMatchesTheOracle) {
    const testing::ScratchDir dir;
    auto loaded = model::Model::load(per_channel_model(dir));
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    const model::Model& m = *loaded.value();
    ASSERT_FALSE(image::fused_patch_embed_possible(m.preprocess()));
    const auto golden =
        test::read_golden(test::test_data_dir() / "per_channel_norm/golden.safetensors");

    image::PreprocessConfig pp = effective_preprocess(m, SessionOptions{});
    pp.pixel_values = false;  // what qvl-run asks for: the decision is not the caller's
    auto prompt = prepare_chat_prompt(m, describe_image(), pp, {});
    ASSERT_TRUE(prompt.ok()) << prompt.status().message();
    std::vector<std::int64_t> ids(prompt->ids.begin(), prompt->ids.end());
    EXPECT_EQ(ids, golden.at("input_ids").as_ints());
    ASSERT_EQ(prompt->images.size(), 1u);
    EXPECT_LE(
        test::relative_error(prompt->images[0].pixel_values, golden.at("pixel_values").values),
        1e-6);

    SessionOptions so;
    so.threads = 2;
    so.ctx_size = 64;
    so.precision = Precision::kF32;
    auto session = Session::create(m, so);
    ASSERT_TRUE(session.ok()) << session.status().message();
    Session& s = *session.value();
    std::map<std::string, std::vector<float>> trace;
    s.set_observer(
        [&](const std::string& node, const float* data, int rows, int cols, std::ptrdiff_t stride) {
            if (node.rfind("vision.", 0) != 0) return;
            std::vector<float>& v = trace[node];
            for (int r = 0; r < rows; ++r)
                v.insert(v.end(), data + r * stride, data + r * stride + cols);
        });
    GenerateParams gp;
    gp.n_predict = 4;
    gp.ignore_eos = true;
    auto result = generate(s, prompt.value(), gp, {});
    ASSERT_TRUE(result.ok()) << result.status().message();

    const std::map<std::string, std::string> pairs = {
        {"vision.patch_embed", "vision.patch_embed"},
        {"vision.merger.out", "vision.image_embeds"},
        {"vision.deepstack.0.out", "vision.deepstack.0"},
        {"vision.deepstack.2.out", "vision.deepstack.2"},
    };
    for (const auto& [ours, theirs] : pairs) {
        ASSERT_TRUE(trace.count(ours)) << ours;
        EXPECT_LE(test::relative_error(trace.at(ours), golden.at(theirs).values), kStrict) << ours;
    }
    std::vector<std::int64_t> tokens(result->tokens.begin(), result->tokens.end());
    EXPECT_EQ(tokens, golden.at("generated_ids").as_ints());
}

}  // namespace
}  // namespace qvl::runtime
