// What qvl-synth writes: the Qwen3-VL-2B-Instruct configuration files (spec section 1.4,
// byte-exact for the real dimensions) and the list of checkpoint tensors (spec section 2.1: Hugging
// Face names, shapes, and the scale of the random values each one gets).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace qvl::synth {

// The architecture numbers that vary between the real model and the tiny test model.
struct SynthDims {
    int vocab_size = 151936;
    int hidden_size = 2048;
    int intermediate_size = 6144;
    int num_hidden_layers = 28;
    int num_attention_heads = 16;
    int num_key_value_heads = 8;
    int head_dim = 128;
    std::array<int, 3> mrope_section = {24, 20, 20};
    int vision_depth = 24;
    int vision_hidden_size = 1024;
    int vision_num_heads = 16;
    int vision_intermediate_size = 4096;
    int vision_out_hidden_size = 2048;
    int num_position_embeddings = 2304;
    std::array<int, 3> deepstack_visual_indexes = {5, 11, 17};
    int in_channels = 3;
    int patch_size = 16;
    int temporal_patch_size = 2;
    int spatial_merge_size = 2;
    int shortest_edge = 65536;  // preprocessor min pixels
    int longest_edge = 16777216;
};

// Qwen3-VL-2B-Instruct.
SynthDims real_dims();
// The dimensions of tests/data/tiny-qwen3vl (hidden 64, 4 + 4 layers, vocab 151936).
SynthDims tiny_dims();

// config.json as transformers writes it (keys sorted, 2-space indent, trailing newline); for
// real_dims() this is the 1505-byte file of the published checkpoint.
std::string config_json(const SynthDims& dims);
// generation_config.json of the published checkpoint (269 bytes, sampling defaults).
std::string generation_config_json();
// preprocessor_config.json (4-space indent, no trailing newline; 390 bytes for real_dims()).
std::string preprocessor_config_json(const SynthDims& dims);

// One checkpoint tensor and the distribution of its random bf16 values: uniform in
// [center - half_width, center + half_width].
struct TensorSpec {
    std::string name;  // Hugging Face name, [A-Za-z0-9._] only
    std::vector<std::int64_t> shape;
    float center = 0.0f;
    float half_width = 0.0f;
};

// Every tensor of the checkpoint (625 for real_dims(); tied embeddings, so no lm_head.weight),
// sorted by name as the Hugging Face writer orders them. Scales keep activations finite through
// all layers: linear weights have std 1/sqrt(fan_in), biases and embeddings std 0.02, norm
// weights 1 +- 0.05.
std::vector<TensorSpec> checkpoint_tensors(const SynthDims& dims);

// Number of elements of a shape (the product of its dimensions).
std::int64_t element_count(const std::vector<std::int64_t>& shape);

}  // namespace qvl::synth
