// The graph: typed nodes over 2-D f32 tensors, built by GraphBuilder (builder.h), placed by
// the planner (planner.h), run by the Executor (executor.h). Nodes are plain data (one parameter
// struct per op kind); executor.cpp runs each kind in one short function. Weights are not tensors:
// a node holds pointers into the mapped checkpoint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "graph/tensor.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "kernels/types.h"

namespace qvl::graph {

enum class OpKind {
    kEmbed,        // out[i] = table row ids[i] (bf16 or f32 table)
    kPatchEmbed,   // out = patchify(lut[rgb image]) · Wᵀ + bias (fused vision patch embedding)
    kMatmul,       // out = act(in0 · Wᵀ + bias) + in1 (in1 optional residual)
    kMatmulGated,  // out = silu(in0 · Wgᵀ) ⊙ (in0 · Wuᵀ)
    kLayerNorm,    // out = LayerNorm(in0) over cols
    kRmsNorm,      // out = RMSNorm(in0) over groups of `group` columns (per head when < cols)
    kRope,         // in place on in0 (out is in0): rotate_half RoPE with cos=in1, sin=in2
    kAttention,    // out = softmax(q kᵀ · scale) v; q=in0, k/v = in1/in2 or the KV cache
    kStoreKv,      // copies k=in0, v=in1 rows into the KV cache at position pos0
    kAdd,          // out = in0 + in1
    kAddRows,      // in place on in0: in0[rows[i]] += in1[i]
    kScatterRows,  // in place on in0: in0[rows[i]] = in1[i]
    kCount,
};

const char* op_name(OpKind op);

struct WeightRef {
    const void* data = nullptr;
    kernels::WeightType type = kernels::WeightType::kBF16;
    std::ptrdiff_t ld = 0;
    int rows = 0, cols = 0;
};

// Where a layer's keys and values live: [kv_head][pos][head_dim] for one layer, elements of
// `type` (f32, or bf16 outside f32 precision: StoreKv rounds to it, attention widens from it).
struct KvLayerView {
    void* k = nullptr;
    void* v = nullptr;
    std::ptrdiff_t head_stride = 0;  // elements between heads (max_ctx * head_dim)
    kernels::KvType type = kernels::KvType::kF32;
};

// One sequence's keys and values for every layer, as the graph builders see them: layer il's
// keys start il * layer_stride elements after base, its values half a layer later. The owner of
// the arena (runtime/kv_cache.h) hands this out; builders never see the arena itself.
struct KvCacheView {
    void* base = nullptr;
    std::ptrdiff_t layer_stride = 0;  // elements from one layer's keys to the next's (2 * half)
    std::ptrdiff_t head_stride = 0;   // elements between heads (max_ctx * head_dim)
    kernels::KvType type = kernels::KvType::kF32;

    KvLayerView layer(int il) const {
        const auto elem = std::ptrdiff_t(kernels::kv_type_bytes(type));
        std::byte* k = static_cast<std::byte*>(base) + std::ptrdiff_t(il) * layer_stride * elem;
        return {.k = k, .v = k + layer_stride / 2 * elem, .head_stride = head_stride, .type = type};
    }
};

// One small parameter struct per op kind, in OpKind order (NodeParams' index is the OpKind).
namespace op {
struct Embed {  // out[i] = table row ids[i]
    WeightRef table;
    const std::int32_t* ids = nullptr;
};
struct PatchEmbed {  // the resized image (HWC bytes) and the 256-entry normalisation table
    WeightRef w;
    const float* bias = nullptr;
    const std::uint8_t* rgb = nullptr;
    int height = 0, width = 0;
    int patch = 0, temporal = 0, merge = 0;
    const float* lut = nullptr;
    kernels::GemmPrecision precision = kernels::GemmPrecision::kF32;
};
struct Matmul {  // in1, when valid, is the residual
    WeightRef w;
    const float* bias = nullptr;
    kernels::GemmActivation act = kernels::GemmActivation::kNone;
    kernels::GemmPrecision precision = kernels::GemmPrecision::kF32;
};
struct MatmulGated {
    WeightRef gate, up;
    kernels::GemmPrecision precision = kernels::GemmPrecision::kF32;
};
struct LayerNorm {
    const float* w = nullptr;
    const float* b = nullptr;
    float eps = 0.f;
};
struct RmsNorm {
    const float* w = nullptr;
    float eps = 0.f;
    int group = 0;  // columns per normalised group (per head when < cols)
};
struct Rope {
    int n_heads = 0, head_dim = 0;
};
struct Attention {
    int n_heads = 0, n_kv_heads = 0, head_dim = 0;
    float scale = 0.f;
    bool causal = false;
    int pos0 = 0;  // absolute position of the first query row
    int n_kv = 0;  // keys visible (in1's rows, or in the cache)
    // kBF16 rounds the operands of the products to bf16 where the kernel supports it.
    kernels::GemmPrecision precision = kernels::GemmPrecision::kF32;
    bool use_cache = false;  // keys and values from kv instead of in1 / in2
    KvLayerView kv;
    // A decode row with its preparation fused in (prep.q_norm set; one query row, use_cache):
    // in0/in1/in2 are the row's raw q, k, v, and the task of kv head h first does for its heads
    // what the q_norm, k_norm, q_rope, k_rope and kv nodes of a prefill do (same kernels, so
    // the same bits; q and k are finished in place), storing k and v at pos0, then attends. A
    // decode step's serial work becomes part of the attention job (graph/decode_row.h).
    struct DecodePrep {
        const float* q_norm = nullptr;  // [head_dim] RMSNorm weights
        const float* k_norm = nullptr;
        float eps = 0.f;
        const float* cos = nullptr;  // [head_dim / 2] this row's RoPE tables
        const float* sin = nullptr;
    } prep;
};
struct StoreKv {
    KvLayerView kv;
    int pos0 = 0;  // absolute position of the first stored row
    int n_kv_heads = 0, head_dim = 0;
};
struct Add {};
struct AddRows {
    const std::int32_t* rows = nullptr;
};
struct ScatterRows {
    const std::int32_t* rows = nullptr;
};
}  // namespace op

using NodeParams =
    std::variant<op::Embed, op::PatchEmbed, op::Matmul, op::MatmulGated, op::LayerNorm, op::RmsNorm,
                 op::Rope, op::Attention, op::StoreKv, op::Add, op::AddRows, op::ScatterRows>;
static_assert(std::variant_size_v<NodeParams> == std::size_t(OpKind::kCount),
              "one parameter struct per OpKind, in OpKind order");

struct Node {
    OpKind op = OpKind::kCount;  // == OpKind(p.index())
    const char* scope = "";      // e.g. "vision.blocks"
    int layer = -1;              // -1: no layer index
    const char* name = "";       // e.g. "out"
    Tensor out;
    Tensor in[3];
    NodeParams p;
};

struct Graph {
    std::vector<TensorDesc> tensors;
    std::vector<Node> nodes;

    void clear() {
        tensors.clear();
        nodes.clear();
    }
    // The tensor's root (following views) and the element offset from the root's start.
    int root_of(int id, std::ptrdiff_t* offset) const;
};

}  // namespace qvl::graph
