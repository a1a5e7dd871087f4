// qvl-run on broken model folders (config, tokenizer, safetensors headers and tensors): exit 3
// and one error line naming the file and the problem (tools in bad_input_support.h).
#include <gtest/gtest.h>

#include "bad_input_support.h"

namespace qvl::bad_input {
namespace {

// ---- the model folder ------------------------------------------------------------------------

TEST_F(BadInput, MissingModelFolder) {
    const fs::path missing = scratch_.path() / "no-such-model";
    expect_refused(run_qvl(args(missing, {})), kModel, "no-such-model");
}

TEST_F(BadInput, ModelPathIsAFile) {
    expect_refused(run_qvl(args(kTiny / "config.json", {})), kModel, "config.json");
}

TEST_F(BadInput, MissingConfig) {
    const fs::path dir = model_copy("m");
    fs::remove(dir / "config.json");
    expect_refused(run_qvl(args(dir, {})), kModel, "config.json");
}

TEST_F(BadInput, ConfigNotJson) {
    expect_refused(run_qvl(args(model_with_config("m", "{\"model_type\": \"qwen3_vl\", oops"), {})),
                   kModel, "config.json");
}

TEST_F(BadInput, ConfigZeroDimension) {
    const std::string cfg = replace_once(tiny_config_, "\"hidden_size\": 64", "\"hidden_size\": 0");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "hidden_size");
}

TEST_F(BadInput, ConfigHugeDimension) {
    const std::string cfg = replace_once(tiny_config_, "\"intermediate_size\": 128",
                                         "\"intermediate_size\": 2000000000");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "intermediate_size");
}

TEST_F(BadInput, ConfigVocabBeyondInt) {
    const std::string cfg =
        replace_once(tiny_config_, "\"vocab_size\": 151936", "\"vocab_size\": 40000000000");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "vocab_size");
}

TEST_F(BadInput, ConfigNegativeHeads) {
    const std::string cfg =
        replace_once(tiny_config_, "\"num_attention_heads\": 4", "\"num_attention_heads\": -4");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "num_attention_heads");
}

TEST_F(BadInput, ConfigUnknownModelType) {
    const std::string cfg =
        replace_once(tiny_config_, "\"model_type\": \"qwen3_vl\"", "\"model_type\": \"llama\"");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "llama");
}

// More layers than the checkpoint holds: the first tensor of layer 4 is missing.
TEST_F(BadInput, ConfigMoreLayersThanWeights) {
    const std::string cfg =
        replace_once(tiny_config_, "\"num_hidden_layers\": 4", "\"num_hidden_layers\": 1000");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "layers.4.");
}

TEST_F(BadInput, MissingWeightsFile) {
    const fs::path dir = model_copy("m");
    fs::remove(dir / "model.safetensors");
    expect_refused(run_qvl(args(dir, {})), kModel, "model.safetensors");
}

TEST_F(BadInput, MissingTokenizer) {
    const fs::path dir = model_copy("m");
    fs::remove(dir / "tokenizer.json");
    expect_refused(run_qvl(args(dir, {})), kModel, "tokenizer.json");
}

TEST_F(BadInput, EmptySafetensors) {
    expect_refused(run_qvl(args(model_with_weights("m", ""), {})), kModel, "model.safetensors");
}

TEST_F(BadInput, TruncatedSafetensors) {
    const std::string full = read_file(kTiny / "model.safetensors");
    // Cut inside the header, then inside the data section.
    expect_refused(run_qvl(args(model_with_weights("a", full.substr(0, 4096)), {})), kModel,
                   "model.safetensors");
    expect_refused(run_qvl(args(model_with_weights("b", full.substr(0, full.size() / 2)), {})),
                   kModel, "model.safetensors");
}

TEST_F(BadInput, SafetensorsHeaderLengthLies) {
    std::string bytes = read_file(kTiny / "model.safetensors");
    bytes.replace(0, 8, u64_le(std::uint64_t(1) << 40));
    expect_refused(run_qvl(args(model_with_weights("a", bytes), {})), kModel, "header length");
    bytes.replace(0, 8, u64_le(bytes.size()));
    expect_refused(run_qvl(args(model_with_weights("b", bytes), {})), kModel, "header length");
}

TEST_F(BadInput, SafetensorsHeaderNotJson) {
    std::string bytes = read_file(kTiny / "model.safetensors");
    bytes[8] = '[';
    bytes[20] = '\x01';
    expect_refused(run_qvl(args(model_with_weights("m", bytes), {})), kModel, "model.safetensors");
}

TEST_F(BadInput, TensorMissing) {
    std::vector<RawTensor> t = tiny_tensors();
    std::erase_if(t, [](const RawTensor& x) { return x.name == kNormName; });
    expect_refused(run_qvl(args(model_with_weights("m", safetensors_bytes(t)), {})), kModel,
                   kNormName);
}

TEST_F(BadInput, TensorWrongShape) {
    std::vector<RawTensor> t = tiny_tensors();
    RawTensor* norm = find_tensor(t, kNormName);
    ASSERT_NE(norm, nullptr);
    norm->shape = {32, 2};  // same bytes, not the [64] the config asks for
    expect_refused(run_qvl(args(model_with_weights("m", safetensors_bytes(t)), {})), kModel,
                   kNormName);
}

TEST_F(BadInput, TensorUnsupportedDtype) {
    std::vector<RawTensor> t = tiny_tensors();
    RawTensor* norm = find_tensor(t, kNormName);
    ASSERT_NE(norm, nullptr);
    norm->dtype = "I64";
    norm->bytes.assign(64 * 8, '\0');
    expect_refused(run_qvl(args(model_with_weights("m", safetensors_bytes(t)), {})), kModel, "I64");
}

// The header says BF16 [64] (128 bytes) but its range holds 64 bytes.
TEST_F(BadInput, TensorRangeDisagreesWithShape) {
    std::vector<RawTensor> t = tiny_tensors();
    RawTensor* norm = find_tensor(t, kNormName);
    ASSERT_NE(norm, nullptr);
    norm->bytes.resize(64);
    expect_refused(run_qvl(args(model_with_weights("m", safetensors_bytes(t)), {})), kModel,
                   kNormName);
}

}  // namespace
}  // namespace qvl::bad_input
