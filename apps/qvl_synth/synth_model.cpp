// The configuration texts are templates of the published files, so that the real dimensions
// reproduce them byte for byte (the spec checks their sizes against the hub: 1505, 269 and 390
// bytes) and loaders see exactly what a downloaded checkpoint holds.
#include "synth_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace qvl::synth {

SynthDims real_dims() { return SynthDims{}; }

SynthDims tiny_dims() {
    SynthDims d;
    d.hidden_size = 64;
    d.intermediate_size = 128;
    d.num_hidden_layers = 4;
    d.num_attention_heads = 4;
    d.num_key_value_heads = 2;
    d.head_dim = 16;
    d.mrope_section = {4, 2, 2};
    d.vision_depth = 4;
    d.vision_hidden_size = 32;
    d.vision_num_heads = 2;
    d.vision_intermediate_size = 64;
    d.vision_out_hidden_size = 64;
    d.num_position_embeddings = 64;
    d.deepstack_visual_indexes = {0, 2, 3};
    d.shortest_edge = 4096;
    return d;
}

namespace {

// Python's json.dumps(indent=n) spreads a list over one line per item.
std::string json_int_list(const std::array<int, 3>& v, int indent) {
    const std::string inner(std::size_t(indent) + 2, ' ');
    const std::string outer(std::size_t(indent), ' ');
    return fmt::format("[\n{0}{1},\n{0}{2},\n{0}{3}\n{4}]", inner, v[0], v[1], v[2], outer);
}

}  // namespace

std::string config_json(const SynthDims& d) {
    return fmt::format(
        R"({{
  "architectures": [
    "Qwen3VLForConditionalGeneration"
  ],
  "image_token_id": 151655,
  "model_type": "qwen3_vl",
  "text_config": {{
    "attention_bias": false,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "dtype": "bfloat16",
    "eos_token_id": 151645,
    "head_dim": {head_dim},
    "hidden_act": "silu",
    "hidden_size": {hidden},
    "initializer_range": 0.02,
    "intermediate_size": {ffn},
    "max_position_embeddings": 262144,
    "model_type": "qwen3_vl_text",
    "num_attention_heads": {heads},
    "num_hidden_layers": {layers},
    "num_key_value_heads": {kv_heads},
    "rms_norm_eps": 1e-06,
    "rope_scaling": {{
      "mrope_interleaved": true,
      "mrope_section": {mrope},
      "rope_type": "default"
    }},
    "rope_theta": 5000000,
    "tie_word_embeddings": true,
    "use_cache": true,
    "vocab_size": {vocab}
  }},
  "tie_word_embeddings": true,
  "transformers_version": "4.57.0.dev0",
  "video_token_id": 151656,
  "vision_config": {{
    "deepstack_visual_indexes": {deepstack},
    "depth": {v_depth},
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_size": {v_hidden},
    "in_channels": {in_channels},
    "initializer_range": 0.02,
    "intermediate_size": {v_ffn},
    "model_type": "qwen3_vl",
    "num_heads": {v_heads},
    "num_position_embeddings": {v_pos},
    "out_hidden_size": {v_out},
    "patch_size": {patch},
    "spatial_merge_size": {merge},
    "temporal_patch_size": {temporal}
  }},
  "vision_end_token_id": 151653,
  "vision_start_token_id": 151652
}}
)",
        fmt::arg("head_dim", d.head_dim), fmt::arg("hidden", d.hidden_size),
        fmt::arg("ffn", d.intermediate_size), fmt::arg("heads", d.num_attention_heads),
        fmt::arg("layers", d.num_hidden_layers), fmt::arg("kv_heads", d.num_key_value_heads),
        fmt::arg("mrope", json_int_list(d.mrope_section, 6)), fmt::arg("vocab", d.vocab_size),
        fmt::arg("deepstack", json_int_list(d.deepstack_visual_indexes, 4)),
        fmt::arg("v_depth", d.vision_depth), fmt::arg("v_hidden", d.vision_hidden_size),
        fmt::arg("in_channels", d.in_channels), fmt::arg("v_ffn", d.vision_intermediate_size),
        fmt::arg("v_heads", d.vision_num_heads), fmt::arg("v_pos", d.num_position_embeddings),
        fmt::arg("v_out", d.vision_out_hidden_size), fmt::arg("patch", d.patch_size),
        fmt::arg("merge", d.spatial_merge_size), fmt::arg("temporal", d.temporal_patch_size));
}

std::string generation_config_json() {
    return R"({
    "bos_token_id": 151643,
    "pad_token_id": 151643,
    "do_sample": true,
    "eos_token_id": [
        151645,
        151643
    ],
    "top_k": 20,
    "top_p": 0.8,
    "repetition_penalty": 1.0,
    "temperature": 0.7,
    "transformers_version": "4.56.0"
})";
}

std::string preprocessor_config_json(const SynthDims& d) {
    return fmt::format(
        R"({{
    "size": {{
        "longest_edge": {longest},
        "shortest_edge": {shortest}
    }},
    "patch_size": {patch},
    "temporal_patch_size": {temporal},
    "merge_size": {merge},
    "image_mean": [
        0.5,
        0.5,
        0.5
    ],
    "image_std": [
        0.5,
        0.5,
        0.5
    ],
    "processor_class": "Qwen3VLProcessor",
    "image_processor_type": "Qwen2VLImageProcessorFast"
}})",
        fmt::arg("longest", d.longest_edge), fmt::arg("shortest", d.shortest_edge),
        fmt::arg("patch", d.patch_size), fmt::arg("temporal", d.temporal_patch_size),
        fmt::arg("merge", d.spatial_merge_size));
}

std::int64_t element_count(const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (std::int64_t s : shape) n *= s;
    return n;
}

namespace {

constexpr float kSqrt3 = 1.7320508f;
constexpr float kSmallStd = 0.02f;  // biases, embeddings: the config's initializer_range

// Uniform with the given standard deviation, centred on zero.
TensorSpec uniform(std::string name, std::vector<std::int64_t> shape, float std_dev) {
    return TensorSpec{std::move(name), std::move(shape), 0.0f, kSqrt3 * std_dev};
}

TensorSpec linear(std::string name, std::int64_t out, std::int64_t in) {
    return uniform(std::move(name), {out, in}, 1.0f / std::sqrt(float(in)));
}

TensorSpec bias(std::string name, std::int64_t n) {
    return uniform(std::move(name), {n}, kSmallStd);
}

TensorSpec norm_weight(std::string name, std::int64_t n) {
    return TensorSpec{std::move(name), {n}, 1.0f, 0.05f};
}

void add_vision(const SynthDims& d, std::vector<TensorSpec>* t) {
    const std::string p = "model.visual.";
    const std::int64_t h = d.vision_hidden_size, ff = d.vision_intermediate_size;
    const std::int64_t merged = h * d.spatial_merge_size * d.spatial_merge_size;
    const std::int64_t patch_in =
        std::int64_t(d.in_channels) * d.temporal_patch_size * d.patch_size * d.patch_size;
    t->push_back(uniform(p + "patch_embed.proj.weight",
                         {h, d.in_channels, d.temporal_patch_size, d.patch_size, d.patch_size},
                         1.0f / std::sqrt(float(patch_in))));
    t->push_back(bias(p + "patch_embed.proj.bias", h));
    t->push_back(uniform(p + "pos_embed.weight", {d.num_position_embeddings, h}, kSmallStd));
    for (int i = 0; i < d.vision_depth; ++i) {
        const std::string b = fmt::format("{}blocks.{}.", p, i);
        t->push_back(norm_weight(b + "norm1.weight", h));
        t->push_back(bias(b + "norm1.bias", h));
        t->push_back(linear(b + "attn.qkv.weight", 3 * h, h));
        t->push_back(bias(b + "attn.qkv.bias", 3 * h));
        t->push_back(linear(b + "attn.proj.weight", h, h));
        t->push_back(bias(b + "attn.proj.bias", h));
        t->push_back(norm_weight(b + "norm2.weight", h));
        t->push_back(bias(b + "norm2.bias", h));
        t->push_back(linear(b + "mlp.linear_fc1.weight", ff, h));
        t->push_back(bias(b + "mlp.linear_fc1.bias", ff));
        t->push_back(linear(b + "mlp.linear_fc2.weight", h, ff));
        t->push_back(bias(b + "mlp.linear_fc2.bias", h));
    }
    // The final merger normalises before the 2x2 shuffle ([h]); DeepStack mergers after it.
    auto merger = [&](const std::string& m, std::int64_t norm_width) {
        t->push_back(norm_weight(m + "norm.weight", norm_width));
        t->push_back(bias(m + "norm.bias", norm_width));
        t->push_back(linear(m + "linear_fc1.weight", merged, merged));
        t->push_back(bias(m + "linear_fc1.bias", merged));
        t->push_back(linear(m + "linear_fc2.weight", d.vision_out_hidden_size, merged));
        t->push_back(bias(m + "linear_fc2.bias", d.vision_out_hidden_size));
    };
    merger(p + "merger.", h);
    for (std::size_t k = 0; k < d.deepstack_visual_indexes.size(); ++k) {
        merger(fmt::format("{}deepstack_merger_list.{}.", p, k), merged);
    }
}

void add_text(const SynthDims& d, std::vector<TensorSpec>* t) {
    const std::string p = "model.language_model.";
    const std::int64_t h = d.hidden_size, ff = d.intermediate_size;
    const std::int64_t q = std::int64_t(d.num_attention_heads) * d.head_dim;
    const std::int64_t kv = std::int64_t(d.num_key_value_heads) * d.head_dim;
    t->push_back(uniform(p + "embed_tokens.weight", {d.vocab_size, h}, kSmallStd));
    for (int j = 0; j < d.num_hidden_layers; ++j) {
        const std::string l = fmt::format("{}layers.{}.", p, j);
        t->push_back(norm_weight(l + "input_layernorm.weight", h));
        t->push_back(linear(l + "self_attn.q_proj.weight", q, h));
        t->push_back(linear(l + "self_attn.k_proj.weight", kv, h));
        t->push_back(linear(l + "self_attn.v_proj.weight", kv, h));
        t->push_back(linear(l + "self_attn.o_proj.weight", h, q));
        t->push_back(norm_weight(l + "self_attn.q_norm.weight", d.head_dim));
        t->push_back(norm_weight(l + "self_attn.k_norm.weight", d.head_dim));
        t->push_back(norm_weight(l + "post_attention_layernorm.weight", h));
        t->push_back(linear(l + "mlp.gate_proj.weight", ff, h));
        t->push_back(linear(l + "mlp.up_proj.weight", ff, h));
        t->push_back(linear(l + "mlp.down_proj.weight", h, ff));
    }
    t->push_back(norm_weight(p + "norm.weight", h));
}

}  // namespace

std::vector<TensorSpec> checkpoint_tensors(const SynthDims& dims) {
    std::vector<TensorSpec> tensors;
    add_vision(dims, &tensors);
    add_text(dims, &tensors);
    std::sort(tensors.begin(), tensors.end(),
              [](const TensorSpec& a, const TensorSpec& b) { return a.name < b.name; });
    return tensors;
}

}  // namespace qvl::synth
