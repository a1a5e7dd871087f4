// Every Hugging Face tensor name of a Qwen3-VL checkpoint, in one table (spec §2.1), verbatim so
// a name in a log can be pasted into a PyTorch session. Per-block names are a prefix function
// plus a leaf from the lists below: vision_block(3) + kNorm1Weight =
// "model.visual.blocks.3.norm1.weight".
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace qvl::model::names {

// Vision tower (model.visual.*).
inline constexpr std::string_view kPatchEmbedWeight = "model.visual.patch_embed.proj.weight";
inline constexpr std::string_view kPatchEmbedBias = "model.visual.patch_embed.proj.bias";
inline constexpr std::string_view kPosEmbedWeight = "model.visual.pos_embed.weight";
inline std::string vision_block(int i) { return fmt::format("model.visual.blocks.{}.", i); }
inline constexpr std::string_view kMerger = "model.visual.merger.";
inline std::string deepstack_merger(int k) {
    return fmt::format("model.visual.deepstack_merger_list.{}.", k);
}

// Leaves of vision_block(i).
inline constexpr std::string_view kNorm1Weight = "norm1.weight";
inline constexpr std::string_view kNorm1Bias = "norm1.bias";
inline constexpr std::string_view kQkvWeight = "attn.qkv.weight";
inline constexpr std::string_view kQkvBias = "attn.qkv.bias";
inline constexpr std::string_view kProjWeight = "attn.proj.weight";
inline constexpr std::string_view kProjBias = "attn.proj.bias";
inline constexpr std::string_view kNorm2Weight = "norm2.weight";
inline constexpr std::string_view kNorm2Bias = "norm2.bias";
inline constexpr std::string_view kMlpFc1Weight = "mlp.linear_fc1.weight";
inline constexpr std::string_view kMlpFc1Bias = "mlp.linear_fc1.bias";
inline constexpr std::string_view kMlpFc2Weight = "mlp.linear_fc2.weight";
inline constexpr std::string_view kMlpFc2Bias = "mlp.linear_fc2.bias";

// Leaves of kMerger and deepstack_merger(k).
inline constexpr std::string_view kMergerNormWeight = "norm.weight";
inline constexpr std::string_view kMergerNormBias = "norm.bias";
inline constexpr std::string_view kMergerFc1Weight = "linear_fc1.weight";
inline constexpr std::string_view kMergerFc1Bias = "linear_fc1.bias";
inline constexpr std::string_view kMergerFc2Weight = "linear_fc2.weight";
inline constexpr std::string_view kMergerFc2Bias = "linear_fc2.bias";

// Text decoder (model.language_model.*).
inline constexpr std::string_view kEmbedTokens = "model.language_model.embed_tokens.weight";
inline constexpr std::string_view kFinalNorm = "model.language_model.norm.weight";
inline constexpr std::string_view kLmHead = "lm_head.weight";  // absent when tied
inline std::string text_layer(int j) { return fmt::format("model.language_model.layers.{}.", j); }

// Leaves of text_layer(j).
inline constexpr std::string_view kInputNorm = "input_layernorm.weight";
inline constexpr std::string_view kQProj = "self_attn.q_proj.weight";
inline constexpr std::string_view kKProj = "self_attn.k_proj.weight";
inline constexpr std::string_view kVProj = "self_attn.v_proj.weight";
inline constexpr std::string_view kOProj = "self_attn.o_proj.weight";
inline constexpr std::string_view kQNorm = "self_attn.q_norm.weight";
inline constexpr std::string_view kKNorm = "self_attn.k_norm.weight";
inline constexpr std::string_view kPostNorm = "post_attention_layernorm.weight";
inline constexpr std::string_view kGateProj = "mlp.gate_proj.weight";
inline constexpr std::string_view kUpProj = "mlp.up_proj.weight";
inline constexpr std::string_view kDownProj = "mlp.down_proj.weight";

}  // namespace qvl::model::names
