#include "graph/decode_row.h"

#include <cstring>

#include "base/bf16.h"

namespace qvl::graph {

void store_kv_head(const KvLayerView& kv, int pos, int head, int head_dim, const float* k,
                   const float* v) {
    const std::ptrdiff_t dst = head * kv.head_stride + std::ptrdiff_t(pos) * head_dim;
    const auto store = [&](void* arena, const float* src) {
        if (kv.type == kernels::KvType::kBF16) {
            auto* out = static_cast<base::bf16*>(arena) + dst;
            for (int d = 0; d < head_dim; ++d) out[d] = base::f32_to_bf16(src[d]);
        } else {
            std::memcpy(static_cast<float*>(arena) + dst, src, sizeof(float) * head_dim);
        }
    };
    store(kv.k, k);
    store(kv.v, v);
}

namespace {

// RMSNorm then RoPE of `heads` heads starting at x, in place: what the rms_norm (per head) and
// rope nodes do to them.
void norm_rope_heads(const kernels::KernelTable& table, const op::Attention::DecodePrep& p,
                     const float* w, float* x, int heads, int head_dim) {
    table.rms_norm_f32({.x = x,
                        .x_stride = head_dim,
                        .w = w,
                        .y = x,
                        .y_stride = head_dim,
                        .rows = heads,
                        .dim = head_dim,
                        .eps = p.eps});
    table.rope_f32({.x = x,
                    .x_stride = std::ptrdiff_t(heads) * head_dim,
                    .rows = 1,
                    .n_heads = heads,
                    .head_dim = head_dim,
                    .cos = p.cos,
                    .sin = p.sin,
                    .cs_stride = head_dim / 2});
}

}  // namespace

void prepare_decode_head(const kernels::KernelTable& table, const DecodeRow& row, int kv_head) {
    if (row.prep == nullptr) return;
    const int hd = row.head_dim;
    const int group = row.n_heads / row.n_kv_heads;
    float* k = row.k + std::ptrdiff_t(kv_head) * hd;
    norm_rope_heads(table, *row.prep, row.prep->k_norm, k, 1, hd);
    store_kv_head(row.kv, row.pos, kv_head, hd, k, row.v + std::ptrdiff_t(kv_head) * hd);
    norm_rope_heads(table, *row.prep, row.prep->q_norm,
                    row.q + std::ptrdiff_t(kv_head) * group * hd, group, hd);
}

}  // namespace qvl::graph
