// Tests for model/config: the tiny and the real 2B config.json (both rope serialisations),
// generation_config.json, and a table of broken configs each with its ErrorCode and message.
#include "model/config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/json.h"
#include "model/model.h"
#include "support/scratch_dir.h"

namespace qvl::model {
namespace {

using base::ErrorCode;
using testing::ScratchDir;

const char* const kTinyDir = QVL_TEST_DATA_DIR "/tiny-qwen3vl";

TEST(ModelConfig, LoadsTinyCheckpointConfig) {
    const auto c = model::load_model_config(std::string(kTinyDir) + "/config.json");
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->model_type, "qwen3_vl");
    EXPECT_EQ(c->text.vocab_size, 151936);
    EXPECT_EQ(c->text.hidden_size, 64);
    EXPECT_EQ(c->text.intermediate_size, 128);
    EXPECT_EQ(c->text.num_hidden_layers, 4);
    EXPECT_EQ(c->text.num_attention_heads, 4);
    EXPECT_EQ(c->text.num_key_value_heads, 2);
    EXPECT_EQ(c->text.head_dim, 16);
    EXPECT_FLOAT_EQ(c->text.rms_norm_eps, 1e-6f);
    EXPECT_EQ(c->text.rope_theta, 5000000.0);
    EXPECT_EQ(c->text.mrope_section[0], 4);
    EXPECT_EQ(c->text.mrope_section[1], 2);
    EXPECT_EQ(c->text.mrope_section[2], 2);
    EXPECT_TRUE(c->text.mrope_interleaved);
    EXPECT_EQ(c->text.hidden_act, "silu");
    EXPECT_FALSE(c->text.attention_bias);
    EXPECT_TRUE(c->tie_word_embeddings);
    EXPECT_TRUE(c->text.tie_word_embeddings);
    EXPECT_EQ(c->text.max_position_embeddings, 262144);
    EXPECT_EQ(c->vision.depth, 4);
    EXPECT_EQ(c->vision.hidden_size, 32);
    EXPECT_EQ(c->vision.num_heads, 2);
    EXPECT_EQ(c->vision.head_dim(), 16);
    EXPECT_EQ(c->vision.intermediate_size, 64);
    EXPECT_EQ(c->vision.patch_size, 16);
    EXPECT_EQ(c->vision.temporal_patch_size, 2);
    EXPECT_EQ(c->vision.spatial_merge_size, 2);
    EXPECT_EQ(c->vision.in_channels, 3);
    EXPECT_EQ(c->vision.out_hidden_size, 64);
    EXPECT_EQ(c->vision.num_position_embeddings, 64);
    EXPECT_EQ(c->vision.deepstack_visual_indexes, (std::vector<int>{0, 2, 3}));
    EXPECT_EQ(c->vision.hidden_act, "gelu_pytorch_tanh");
    EXPECT_EQ(c->image_token_id, 151655);
    EXPECT_EQ(c->video_token_id, 151656);
    EXPECT_EQ(c->vision_start_token_id, 151652);
    EXPECT_EQ(c->vision_end_token_id, 151653);
}

void expect_2b(const model::ModelConfig& c) {
    EXPECT_EQ(c.text.vocab_size, 151936);
    EXPECT_EQ(c.text.hidden_size, 2048);
    EXPECT_EQ(c.text.intermediate_size, 6144);
    EXPECT_EQ(c.text.num_hidden_layers, 28);
    EXPECT_EQ(c.text.num_attention_heads, 16);
    EXPECT_EQ(c.text.num_key_value_heads, 8);
    EXPECT_EQ(c.text.head_dim, 128);
    EXPECT_EQ(c.text.rope_theta, 5000000.0);
    EXPECT_EQ(c.text.mrope_section[0], 24);
    EXPECT_EQ(c.text.mrope_section[1], 20);
    EXPECT_EQ(c.text.mrope_section[2], 20);
    EXPECT_TRUE(c.text.mrope_interleaved);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_TRUE(c.text.tie_word_embeddings);
    EXPECT_EQ(c.vision.depth, 24);
    EXPECT_EQ(c.vision.hidden_size, 1024);
    EXPECT_EQ(c.vision.head_dim(), 64);
    EXPECT_EQ(c.vision.intermediate_size, 4096);
    EXPECT_EQ(c.vision.out_hidden_size, 2048);
    EXPECT_EQ(c.vision.num_position_embeddings, 2304);
    EXPECT_EQ(c.vision.deepstack_visual_indexes, (std::vector<int>{5, 11, 17}));
    EXPECT_FLOAT_EQ(c.vision.layer_norm_eps, 1e-6f);
    EXPECT_EQ(c.vision.rope_theta, 10000.0);
}

TEST(ModelConfig, LoadsReal2bConfig) {
    const auto c = model::load_model_config(QVL_TEST_DATA_DIR "/configs/qwen3vl-2b-config.json");
    ASSERT_TRUE(c.ok()) << c.status().message();
    expect_2b(c.value());
}

TEST(ModelConfig, LoadsRopeParametersForm) {
    // transformers v5: rope_theta inside text_config.rope_parameters, tie_word_embeddings only
    // in text_config.
    const auto c = model::load_model_config(QVL_TEST_DATA_DIR
                                            "/configs/qwen3vl-2b-config-rope-parameters.json");
    ASSERT_TRUE(c.ok()) << c.status().message();
    expect_2b(c.value());
}

std::string read_tiny_config() {
    const auto text = io::read_text_file(std::string(kTinyDir) + "/config.json");
    EXPECT_TRUE(text.ok());
    return text.ok() ? text.value() : std::string();
}

struct BadConfig {
    std::string name;
    std::string from;  // replaced (first occurrence) in the tiny config.json
    std::string to;
    ErrorCode code;
    std::string fragment;
};

std::vector<BadConfig> bad_configs() {
    return {
        {"UnknownModelType", R"("model_type": "qwen3_vl")", R"("model_type": "qwen2_vl")",
         ErrorCode::kUnsupported, "model_type 'qwen2_vl' is not supported"},
        {"VisionHeadsNotDividingHidden", R"("num_heads": 2)", R"("num_heads": 3)",
         ErrorCode::kInvalidArgument, "vision_config.num_heads 3 does not divide hidden_size 32"},
        {"KvHeadsNotDividingHeads", R"("num_key_value_heads": 2)", R"("num_key_value_heads": 3)",
         ErrorCode::kInvalidArgument,
         "text_config.num_key_value_heads 3 does not divide num_attention_heads 4"},
        {"MissingKey", R"("intermediate_size": 128,)", "", ErrorCode::kNotFound,
         "missing key 'text_config.intermediate_size'"},
        {"MissingRopeTheta", R"("rope_theta": 5000000,)", "", ErrorCode::kNotFound,
         "missing key 'text_config.rope_theta'"},
        {"MissingTextConfig", R"("text_config")", R"("txt_config")", ErrorCode::kNotFound,
         "missing key 'text_config'"},
        {"ZeroHidden", R"("hidden_size": 64)", R"("hidden_size": 0)", ErrorCode::kInvalidArgument,
         "'text_config.hidden_size' is 0, expected 1..1000000"},
        {"NegativeDepth", R"("depth": 4)", R"("depth": -4)", ErrorCode::kInvalidArgument,
         "'vision_config.depth' is -4, expected 1..1000000"},
        {"AbsurdVocab", R"("vocab_size": 151936)", R"("vocab_size": 1000000000)",
         ErrorCode::kInvalidArgument,
         "'text_config.vocab_size' is 1000000000, expected 1..1000000"},
        {"WrongType", R"("hidden_size": 64)", R"("hidden_size": "64")", ErrorCode::kCorruptFile,
         "'text_config.hidden_size' is a string, expected an integer"},
        {"FractionalSize", R"("hidden_size": 64)", R"("hidden_size": 64.5)",
         ErrorCode::kCorruptFile, "'text_config.hidden_size' is a number, expected an integer"},
        {"OddHeadDim", R"("head_dim": 16)", R"("head_dim": 15)", ErrorCode::kInvalidArgument,
         "text_config.head_dim 15 is odd"},
        {"MropeSum", "4,\n        2,\n        2", "4,\n        2,\n        3",
         ErrorCode::kInvalidArgument,
         "mrope_section [4, 2, 3] sums to 9, expected head_dim / 2 = 8"},
        {"MropeTwoEntries", "4,\n        2,\n        2", "4,\n        4",
         ErrorCode::kInvalidArgument, "'text_config.rope_scaling.mrope_section' has 2 entries"},
        {"MropeNotInterleaved", R"("mrope_interleaved": true)", R"("mrope_interleaved": false)",
         ErrorCode::kUnsupported,
         "config.json: 'text_config.rope_scaling.mrope_interleaved' is false, only the "
         "interleaved"},
        {"RopeType", R"("rope_type": "default")", R"("rope_type": "yarn")", ErrorCode::kUnsupported,
         "'text_config.rope_scaling.rope_type' is 'yarn'"},
        {"DeepstackPastDepth", "0,\n      2,\n      3", "0,\n      2,\n      4",
         ErrorCode::kInvalidArgument,
         "vision_config.deepstack_visual_indexes[2] is 4, expected 0..3 (depth 4)"},
        {"TextActivation", R"("hidden_act": "silu")", R"("hidden_act": "gelu")",
         ErrorCode::kUnsupported, "'text_config.hidden_act' is 'gelu'"},
        {"VisionActivation", R"("hidden_act": "gelu_pytorch_tanh")", R"("hidden_act": "relu")",
         ErrorCode::kUnsupported, "'vision_config.hidden_act' is 'relu'"},
        {"AttentionBias", R"("attention_bias": false)", R"("attention_bias": true)",
         ErrorCode::kUnsupported, "'text_config.attention_bias' is true"},
        {"OutHiddenMismatch", R"("out_hidden_size": 64)", R"("out_hidden_size": 48)",
         ErrorCode::kInvalidArgument,
         "vision_config.out_hidden_size 48 differs from text_config.hidden_size 64"},
        {"PositionGridNotSquare", R"("num_position_embeddings": 64)",
         R"("num_position_embeddings": 60)", ErrorCode::kInvalidArgument,
         "vision_config.num_position_embeddings 60 is not a square grid"},
        {"TokenOutsideVocab", R"("image_token_id": 151655)", R"("image_token_id": 151936)",
         ErrorCode::kInvalidArgument, "image_token_id 151936 is outside the vocabulary of 151936"},
        {"NegativeTokenId", R"("video_token_id": 151656)", R"("video_token_id": -1)",
         ErrorCode::kInvalidArgument, "'video_token_id' is -1, not a token id"},
        {"BadJson", R"("depth": 4,)", R"("depth": 4,,)", ErrorCode::kCorruptFile, "invalid JSON"},
    };
}

class BadConfigTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(BadConfigTest, FailsWithItsError) {
    const BadConfig& c = GetParam();
    std::string text = read_tiny_config();
    const std::size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << "fixture text not found: " << c.from;
    text.replace(at, c.from.size(), c.to);
    ScratchDir dir;
    const auto path = dir.write("config.json", text);
    const auto config = model::load_model_config(path);
    ASSERT_FALSE(config.ok()) << c.name;
    EXPECT_EQ(config.status().code(), c.code) << config.status().message();
    EXPECT_NE(config.status().message().find(c.fragment), std::string::npos)
        << "message: " << config.status().message() << "\nexpected fragment: " << c.fragment;
    EXPECT_EQ(config.status().message().rfind(path.string(), 0), 0u)
        << "message does not start with the file: " << config.status().message();
}

INSTANTIATE_TEST_SUITE_P(Table, BadConfigTest, ::testing::ValuesIn(bad_configs()),
                         [](const ::testing::TestParamInfo<BadConfig>& info) {
                             return info.param.name;
                         });

TEST(ModelConfig, MissingFileIsNotFound) {
    ScratchDir dir;
    const auto c = model::load_model_config(dir.path() / "config.json");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), ErrorCode::kNotFound);
}

TEST(ModelConfig, ValidateCatchesHandBuiltConfigs) {
    auto c = model::load_model_config(std::string(kTinyDir) + "/config.json");
    ASSERT_TRUE(c.ok());
    model::ModelConfig bad = c.value();
    bad.vision.deepstack_visual_indexes = {1, 1};
    const base::Status s = validate_model_config(bad, "hand-built");
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(s.message(),
              "hand-built: vision_config.deepstack_visual_indexes lists block 1 twice");
    EXPECT_TRUE(validate_model_config(c.value(), "tiny").ok());
}

TEST(GenerationConfig, LoadsTinyCheckpointFile) {
    const auto g = model::load_generation_config(std::string(kTinyDir) + "/generation_config.json");
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_TRUE(g->do_sample);
    EXPECT_FLOAT_EQ(g->temperature, 0.7f);
    EXPECT_EQ(g->top_k, 20);
    EXPECT_FLOAT_EQ(g->top_p, 0.8f);
    EXPECT_FLOAT_EQ(g->repetition_penalty, 1.0f);
    EXPECT_EQ(g->eos_token_ids, (std::vector<std::int32_t>{151645, 151643}));
    EXPECT_EQ(g->pad_token_id, 151643);
    EXPECT_EQ(g->bos_token_id, 151643);
}

TEST(GenerationConfig, MissingFileGivesDefaults) {
    ScratchDir dir;
    const auto g = model::load_generation_config(dir.path() / "generation_config.json");
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_FALSE(g->do_sample);
    EXPECT_EQ(g->temperature, 1.0f);
    EXPECT_EQ(g->top_k, 0);
    EXPECT_EQ(g->top_p, 1.0f);
    EXPECT_TRUE(g->eos_token_ids.empty());
    EXPECT_EQ(g->pad_token_id, -1);
}

TEST(GenerationConfig, ScalarEosNullsAndErrors) {
    ScratchDir dir;
    const auto ok = model::load_generation_config(
        dir.write("a.json", R"({"eos_token_id": 7, "top_k": null, "temperature": 0})"));
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    EXPECT_EQ(ok->eos_token_ids, (std::vector<std::int32_t>{7}));
    EXPECT_EQ(ok->top_k, 0);
    EXPECT_EQ(ok->temperature, 0.0f);

    const struct {
        const char* json;
        ErrorCode code;
        const char* fragment;
    } cases[] = {
        {R"({"top_p": 0})", ErrorCode::kInvalidArgument, "'top_p' is 0, expected (0, 1]"},
        {R"({"top_p": 1.5})", ErrorCode::kInvalidArgument, "'top_p' is 1.5"},
        {R"({"temperature": -1})", ErrorCode::kInvalidArgument, "'temperature' is -1"},
        {R"({"top_k": -3})", ErrorCode::kInvalidArgument, "'top_k' is -3"},
        {R"({"repetition_penalty": 0})", ErrorCode::kInvalidArgument, "'repetition_penalty'"},
        {R"({"do_sample": "yes"})", ErrorCode::kCorruptFile, "'do_sample' is a string"},
        {R"({"eos_token_id": [1, "x"]})", ErrorCode::kCorruptFile, "'eos_token_id' is a string"},
        {R"({"eos_token_id": [-5]})", ErrorCode::kInvalidArgument, "holds -5"},
        {R"([1])", ErrorCode::kCorruptFile, "expected a JSON object"},
        {R"({"top_k": )", ErrorCode::kCorruptFile, "invalid JSON"},
    };
    for (const auto& c : cases) {
        const auto g = model::load_generation_config(dir.write("bad.json", c.json));
        ASSERT_FALSE(g.ok()) << c.json;
        EXPECT_EQ(g.status().code(), c.code) << g.status().message();
        EXPECT_NE(g.status().message().find(c.fragment), std::string::npos) << g.status().message();
    }
}

TEST(PreprocessConfig, MustMatchTheVisionTower) {
    VisionConfig vision;
    vision.patch_size = 16;
    vision.temporal_patch_size = 2;
    vision.spatial_merge_size = 2;
    EXPECT_TRUE(check_preprocess_matches_vision(image::PreprocessConfig{}, vision, "pp.json").ok());
    for (int field = 0; field < 3; ++field) {
        image::PreprocessConfig config;
        (field == 0   ? config.patch_size
         : field == 1 ? config.temporal_patch_size
                      : config.merge_size) = 1;
        const base::Status status = check_preprocess_matches_vision(config, vision, "pp.json");
        ASSERT_FALSE(status.ok()) << field;
        EXPECT_EQ(status.code(), base::ErrorCode::kInvalidArgument);
        EXPECT_NE(status.message().find("pp.json: patch_size"), std::string::npos)
            << status.message();
        EXPECT_NE(status.message().find("differ from the model's vision_config (16 / 2 / 2)"),
                  std::string::npos)
            << status.message();
    }
}

}  // namespace
}  // namespace qvl::model
