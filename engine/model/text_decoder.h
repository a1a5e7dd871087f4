// The text decoder as a graph (spec §6-7) for one chunk of tokens at cache positions
// [pos0, pos0 + n_tokens): embeddings with image features spliced in, the Qwen3 layers with
// q/k RMSNorm and interleaved M-RoPE, K/V appended to the cache, causal GQA attention over
// the cache, SwiGLU, deepstack features added after the first layers, and the final norm +
// lm_head on the last row only (the last layer computes only that row past its K/V, none
// without logits). A decode batch instead runs one row per sequence: the
// products see all rows at once (weights read once per step), each row stores its K/V in and
// attends over its own cache, and every row gets logits.
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
    // False: the graph stops before lm_head and returns the final-normed hidden rows
    // ([rows, hidden]), which the caller multiplies (model/logits_screen.h).
    bool lm_head = true;
    // Decode batch: when non-empty (size n_tokens), row i is its own sequence at cache index
    // batch_pos0[i] of batch_kv[i]; kv and pos0 are then unused, there are no visual rows, and
    // the logits cover every row.
    std::span<const graph::KvCacheView> batch_kv;
    const int* batch_pos0 = nullptr;
};

// Most rows a decode batch may have (a session's slot limit; each row adds its own K/V store and
// attention nodes to the step's graph). A row's products do not depend on how many rows there
// are, on either side of the GEMV path's 32 rows (tests/kernels/gemm_row_invariance_test.cpp).
inline constexpr int kMaxDecodeBatch = 32;

// Returns the logits tensor [1, vocab] ([n_tokens, vocab] for a decode batch; invalid when
// !want_logits), or the hidden rows under them when !lm_head.
graph::Tensor build_text_graph(graph::GraphBuilder& g, const TextConfig& cfg, const TextWeights& w,
                               const graph::KvCacheView& kv, const TextGraphInputs& in);

}  // namespace qvl::model
