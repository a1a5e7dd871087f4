// The text decoder as a graph (spec §6-7) for one chunk of tokens at cache positions
// [pos0, pos0 + n_tokens): embeddings with image features spliced in, the Qwen3 layers with
// q/k RMSNorm and interleaved M-RoPE, K/V appended to the cache, causal GQA attention over
// the cache, SwiGLU, deepstack features added after the first layers, and the final norm +
// lm_head on the last row only.
#pragma once

#include <cstdint>
#include <span>

#include "graph/builder.h"
#include "model/config.h"
#include "model/weights.h"

namespace qvl::model {

struct TextGraphInputs {
    int n_tokens = 0;
    int pos0 = 0;                       // cache index of the first token
    const std::int32_t* ids = nullptr;  // [n_tokens]
    float* rope_cos = nullptr;          // [n_tokens, head_dim / 2]
    float* rope_sin = nullptr;
    // Visual rows of this chunk (local row indices, ascending) and their features.
    int n_visual = 0;
    const std::int32_t* visual_rows = nullptr;  // [n_visual]
    float* image_embeds = nullptr;              // [n_visual, hidden]
    std::span<float* const> deepstack;          // each [n_visual, hidden]
    bool want_logits = true;                    // lm_head on the last row
};

// Returns the logits tensor [1, vocab] (invalid when !want_logits).
graph::Tensor build_text_graph(graph::GraphBuilder& g, const TextConfig& cfg, const TextWeights& w,
                               const graph::KvCacheView& kv, const TextGraphInputs& in);

}  // namespace qvl::model
