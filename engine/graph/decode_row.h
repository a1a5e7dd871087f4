// What a decode attention node with its preparation fused in (op::Attention::prep) does before
// it attends, one kv head at a time, and the K/V row store it shares with the StoreKv op. The
// per-head pieces call the same kernels on the same values as the separate q_norm, k_norm,
// q_rope, k_rope and kv nodes of a prefill (every kernel is row and head independent:
// kernels/norm.h, kernels/rope.h), so a decode row stays bit-identical to the same row of a
// prefill or of a decode step of another batch.
#pragma once

#include "graph/graph.h"
#include "kernels/kernel_table.h"

namespace qvl::graph {

// Stores head h of one k row and one v row at position pos of kv (copied for an f32 arena,
// rounded to nearest even for bf16).
void store_kv_head(const KvLayerView& kv, int pos, int head, int head_dim, const float* k,
                   const float* v);

// One decode row of a fused attention node: its raw q, k, v (finished in place) and where its
// K/V go.
struct DecodeRow {
    const op::Attention::DecodePrep* prep = nullptr;  // null: nothing to prepare
    float* q = nullptr;                               // [n_heads * head_dim]
    float* k = nullptr;                               // [n_kv_heads * head_dim]
    const float* v = nullptr;
    KvLayerView kv;
    int pos = 0;
    int n_heads = 0, n_kv_heads = 0, head_dim = 0;
};

// The row of node n (params p) with its tensors' addresses; prep null unless p.prep is set.
// For kv head h (the task of the attention job that reads it): RMSNorm and RoPE of k head h and
// of the query heads of its group, then k and v head h stored at the row's position.
void prepare_decode_head(const kernels::KernelTable& table, const DecodeRow& row, int kv_head);

}  // namespace qvl::graph
