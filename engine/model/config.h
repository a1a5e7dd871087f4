// Typed, validated Qwen3-VL configuration (config.json) and generation defaults
// (generation_config.json). Field meanings and the 2B values: shared docs/qwen3vl-spec.md §1.
//
// load_model_config accepts both serialisations of the text rope settings: transformers 4.57
// (`rope_scaling` {rope_type, mrope_section, mrope_interleaved} + `rope_theta`) and transformers
// v5 (`rope_parameters` with rope_theta inside). It refuses, with a message naming the file and
// the key: a missing required key (kNotFound; also a missing file), a key of the wrong JSON type
// or bad JSON (kCorruptFile), an unknown model_type, activation or rope_type, attention_bias
// or in_channels != 3, mrope_interleaved false (kUnsupported), and values the engine
// cannot run (kInvalidArgument): sizes <= 0 or > 1e6, heads not dividing the hidden size, kv heads
// not dividing heads, odd head_dim, mrope_section not summing to head_dim / 2, deepstack indexes
// outside [0, depth), out_hidden_size != text hidden_size, token ids outside the vocabulary.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace qvl::model {

struct VisionConfig {
    int depth = 0;
    int hidden_size = 0;
    int num_heads = 0;
    int intermediate_size = 0;
    int patch_size = 0;
    int temporal_patch_size = 0;
    int spatial_merge_size = 0;
    int in_channels = 3;
    int out_hidden_size = 0;
    int num_position_embeddings = 0;  // a square: side x side learned grid
    std::vector<int> deepstack_visual_indexes;
    std::string hidden_act;        // gelu_pytorch_tanh (blocks only; the mergers use erf GELU)
    float layer_norm_eps = 1e-6f;  // hard-coded in the reference, not in config.json
    double rope_theta = 10000.0;   // hard-coded in the reference

    int head_dim() const { return num_heads > 0 ? hidden_size / num_heads : 0; }
};

struct TextConfig {
    int vocab_size = 0;
    int hidden_size = 0;
    int intermediate_size = 0;
    int num_hidden_layers = 0;
    int num_attention_heads = 0;
    int num_key_value_heads = 0;
    int head_dim = 0;
    float rms_norm_eps = 0.0f;
    double rope_theta = 0.0;
    int mrope_section[3] = {0, 0, 0};  // (t, h, w) frequency counts, sum == head_dim / 2
    bool mrope_interleaved = true;
    std::string hidden_act;  // silu
    bool attention_bias = false;
    bool tie_word_embeddings = false;
    std::int64_t max_position_embeddings = 0;
};

struct ModelConfig {
    std::string model_type;  // qwen3_vl
    TextConfig text;
    VisionConfig vision;
    bool tie_word_embeddings = false;  // same as text.tie_word_embeddings
    std::int32_t image_token_id = 0;
    std::int32_t video_token_id = 0;
    std::int32_t vision_start_token_id = 0;
    std::int32_t vision_end_token_id = 0;
};

base::Result<ModelConfig> load_model_config(const std::filesystem::path& config_json);
// The same from text; `what` names the source in messages.
base::Result<ModelConfig> parse_model_config(std::string_view json_text, std::string_view what);
// Checks the cross-field rules above on an already-filled config (used by the loaders).
base::Status validate_model_config(const ModelConfig& config, std::string_view what);

struct GenerationConfig {
    bool do_sample = false;
    float temperature = 1.0f;
    int top_k = 0;  // 0 = off
    float top_p = 1.0f;
    float repetition_penalty = 1.0f;
    std::vector<std::int32_t> eos_token_ids;
    std::int32_t pad_token_id = -1;
    std::int32_t bos_token_id = -1;
};

// A missing file gives the defaults above. Keys may be absent or null (default kept);
// eos_token_id may be one integer or a list. Refused: wrong JSON types, temperature < 0,
// top_k < 0, top_p outside (0, 1], repetition_penalty <= 0, negative token ids.
base::Result<GenerationConfig> load_generation_config(const std::filesystem::path& path);

}  // namespace qvl::model
