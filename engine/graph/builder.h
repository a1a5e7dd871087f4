// GraphBuilder: one typed method per op, with shape checks (a mismatch is a bug in the model
// code, so it is a QVL_CHECK, not a Status). Every node is named by the current scope
// ("text.layers", layer 3) plus an op name, giving trace names like "text.layers.3.q_rope".
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace qvl::graph {

struct MatmulOptions {
    const float* bias = nullptr;
    kernels::GemmActivation act = kernels::GemmActivation::kNone;
    Tensor residual;  // added after the activation
};

struct AttentionOptions {
    int n_heads = 0, n_kv_heads = 0, head_dim = 0;
    float scale = 0.f;
    bool causal = false;
    int pos0 = 0;
};

class GraphBuilder {
  public:
    // matmul_precision for every matrix product; attention_precision for attention (kBF16:
    // bf16 products where the kernel supports them, see kernels/attention.h round_bf16).
    GraphBuilder(Graph* graph, kernels::GemmPrecision matmul_precision,
                 kernels::GemmPrecision attention_precision = kernels::GemmPrecision::kF32);

    void set_scope(const char* scope, int layer = -1) {
        scope_ = scope;
        layer_ = layer;
    }

    // Leaves.
    Tensor input(const char* name, float* data, int rows, int cols, std::ptrdiff_t stride = 0);
    Tensor activation(const char* name, int rows, int cols);
    // Rows [row0, row0 + rows) and columns [col0, col0 + cols) of t; metadata only.
    Tensor view(Tensor t, int row0, int rows, int col0, int cols);
    // The same memory read as [rows, cols] (t must be contiguous and rows * cols equal).
    Tensor reshape(Tensor t, int rows, int cols);
    // Keeps an activation alive to the end of the graph so the caller can read it.
    void keep(Tensor t);

    // Ops.
    Tensor embed(const char* name, const WeightRef& table, const std::int32_t* ids, int n_ids);
    // [n_patches, w.rows] from a resized HWC image (sides multiples of patch * merge).
    Tensor patch_embed(const char* name, const std::uint8_t* rgb, int height, int width,
                       const float* lut, int patch, int temporal, int merge, const WeightRef& w,
                       const float* bias);
    Tensor matmul(const char* name, Tensor x, const WeightRef& w,
                  const MatmulOptions& options = {});
    Tensor matmul_gated(const char* name, Tensor x, const WeightRef& gate, const WeightRef& up);
    Tensor layer_norm(const char* name, Tensor x, const float* w, const float* b, float eps);
    Tensor rms_norm(const char* name, Tensor x, const float* w, float eps, int group = 0);
    void rope(const char* name, Tensor x, Tensor cos, Tensor sin, int n_heads, int head_dim);
    Tensor attention(const char* name, Tensor q, Tensor k, Tensor v, const AttentionOptions& o);
    Tensor attention_cached(const char* name, Tensor q, const KvLayerView& kv, int n_kv,
                            const AttentionOptions& o);
    // One decode row (q, k, v: one row each, raw from the projections) with its q/k RMSNorm,
    // RoPE and K/V store fused into the attention (op::Attention::prep): attends over kv's
    // first o.pos0 + 1 keys and writes out (one row, e.g. a view into a batch's output).
    void attention_decode_row(const char* name, Tensor q, Tensor k, Tensor v, Tensor out,
                              const KvLayerView& kv, const op::Attention::DecodePrep& prep,
                              const AttentionOptions& o);
    void store_kv(const char* name, Tensor k, Tensor v, const KvLayerView& kv, int pos0,
                  int n_kv_heads, int head_dim);
    Tensor add(const char* name, Tensor a, Tensor b);
    void add_rows(const char* name, Tensor x, Tensor rows_src, const std::int32_t* rows);
    void scatter_rows(const char* name, Tensor x, Tensor rows_src, const std::int32_t* rows);

    const TensorDesc& desc(Tensor t) const { return graph_->tensors[t.id]; }

  private:
    Tensor new_tensor(const TensorDesc& d);
    Node& new_node(const char* name, Tensor out, const NodeParams& params);

    Graph* graph_;
    kernels::GemmPrecision precision_;
    kernels::GemmPrecision attention_precision_;
    const char* scope_ = "";
    int layer_ = -1;
};

}  // namespace qvl::graph
