#include "model/text_decoder.h"

#include <cmath>

#include "base/check.h"
#include "model/vision_encoder.h"

namespace qvl::model {

using graph::Tensor;

namespace {

// A decode batch's attention from the raw q, k, v rows: row i is one node that finishes its q
// and k (RMSNorm per head, RoPE), stores its K/V in its own sequence's cache and attends over
// it, with the same kernels as the separate nodes of a prefill, so a row's result never depends
// on the others nor on the mode. The nodes are adjacent and independent, so the executor runs
// them as one job (graph/executor.cpp: every sequence's kv heads at once), and each writes its
// row of the output: a step has no serial norm, RoPE, store or scatter nodes left
// (bench/scaling.py: 2.2 ms of a 16.7 ms step at 32 threads before).
Tensor batch_attention(graph::GraphBuilder& g, const TextGraphInputs& in, int il,
                       const TextLayerWeights& l, float eps, Tensor q, Tensor k, Tensor v,
                       const graph::AttentionOptions& base) {
    const int n = in.n_tokens;
    const int half = base.head_dim / 2;
    const int q_cols = base.n_heads * base.head_dim;
    const int kv_cols = base.n_kv_heads * base.head_dim;
    Tensor out = g.activation("attn", n, q_cols);
    for (int i = 0; i < n; ++i) {
        graph::AttentionOptions o = base;
        o.pos0 = in.batch_pos0[i];
        const graph::op::Attention::DecodePrep prep{.q_norm = l.q_norm.data,
                                                    .k_norm = l.k_norm.data,
                                                    .eps = eps,
                                                    .cos = in.rope_cos + std::ptrdiff_t(i) * half,
                                                    .sin = in.rope_sin + std::ptrdiff_t(i) * half};
        g.attention_decode_row("attn", g.view(q, i, 1, 0, q_cols), g.view(k, i, 1, 0, kv_cols),
                               g.view(v, i, 1, 0, kv_cols), g.view(out, i, 1, 0, q_cols),
                               in.batch_kv[std::size_t(i)].layer(il), prep, o);
    }
    return out;
}

// A layer's q, k and v of the normed rows h ([n, heads*hd], [n, kv_heads*hd] twice); with
// norm_and_rope each head of q and k RMS-normed, then rotated (RoPE).
struct QkvHeads {
    Tensor q, k, v;
};
QkvHeads project_qkv(graph::GraphBuilder& g, const TextConfig& cfg, const TextLayerWeights& l,
                     Tensor h, int n, Tensor cos, Tensor sin, bool norm_and_rope) {
    const int head_dim = cfg.head_dim;
    const float eps = cfg.rms_norm_eps;
    const int q_cols = cfg.num_attention_heads * head_dim;
    const int kv_cols = cfg.num_key_value_heads * head_dim;
    Tensor q, k, v;
    if (l.qkv.data != nullptr) {  // one product: better blocked than three small ones
        Tensor qkv = g.matmul("qkv", h, weight_ref(l.qkv));
        q = g.view(qkv, 0, n, 0, q_cols);
        k = g.view(qkv, 0, n, q_cols, kv_cols);
        v = g.view(qkv, 0, n, q_cols + kv_cols, kv_cols);
    } else {
        q = g.matmul("q", h, weight_ref(l.q));
        k = g.matmul("k", h, weight_ref(l.k));
        v = g.matmul("v", h, weight_ref(l.v));
    }
    if (norm_and_rope) {
        q = g.rms_norm("q_norm", q, l.q_norm.data, eps, head_dim);  // per head, before RoPE
        k = g.rms_norm("k_norm", k, l.k_norm.data, eps, head_dim);
        g.rope("q_rope", q, cos, sin, cfg.num_attention_heads, head_dim);
        g.rope("k_rope", k, cos, sin, cfg.num_key_value_heads, head_dim);
    }
    return {q, k, v};
}

// The final norm of the kept rows, then lm_head (unless the caller applies it: the runtime's
// logits screen).
Tensor text_logits(graph::GraphBuilder& g, const TextConfig& cfg, const TextWeights& w, Tensor last,
                   bool lm_head) {
    Tensor h = g.rms_norm("final_norm", last, w.final_norm.data, cfg.rms_norm_eps);
    if (!lm_head) {
        g.keep(h);
        return h;
    }
    Tensor logits = g.matmul("logits", h, weight_ref(w.lm_head));  // [1, vocab]
    g.keep(logits);
    return logits;
}

}  // namespace

// mirrors Qwen3VLTextModel.forward (+ the lm_head of Qwen3VLForConditionalGeneration)
Tensor build_text_graph(graph::GraphBuilder& g, const TextConfig& cfg, const TextWeights& w,
                        const graph::KvCacheView& kv, const TextGraphInputs& in) {
    const int n = in.n_tokens;
    const int d = cfg.hidden_size;
    const int n_heads = cfg.num_attention_heads;
    const int n_kv_heads = cfg.num_key_value_heads;
    const int head_dim = cfg.head_dim;
    const float eps = cfg.rms_norm_eps;
    const bool batch = !in.batch_kv.empty();
    QVL_CHECK(!batch || (int(in.batch_kv.size()) == n && n <= kMaxDecodeBatch &&
                         in.batch_pos0 != nullptr && in.n_visual == 0),
              "text graph: bad decode batch");

    g.set_scope("text");
    Tensor cos = g.input("rope_cos", in.rope_cos, n, head_dim / 2);  // [n, hd/2]
    Tensor sin = g.input("rope_sin", in.rope_sin, n, head_dim / 2);
    Tensor x = g.embed("embed", weight_ref(w.embed), in.ids, n);  // [n, d]
    if (in.n_visual > 0) {
        Tensor feats = g.input("image_embeds", in.image_embeds, in.n_visual, d);
        g.scatter_rows("inputs_embeds", x, feats, in.visual_rows);
    }

    const float scale = 1.0f / std::sqrt(float(head_dim));
    int x_rows = n;  // rows of x: n, or 1 once the last layer keeps only the logits' row
    for (int il = 0; il < cfg.num_hidden_layers; ++il) {
        const TextLayerWeights& l = w.layers[il];
        g.set_scope("text.layers", il);  // mirrors Qwen3VLTextDecoderLayer.forward
        const bool deepstack = in.n_visual > 0 && std::size_t(il) < in.deepstack.size();
        // The last layer's outputs feed only the logits, so past its K/V (which later tokens
        // attend to) a prefill chunk needs its last row, or nothing when it wants no logits:
        // at the 1280x704 image's 896-token prompt that is 3 % of the prefill. Every node is
        // row-invariant, so the row kept is bit-identical to the same row of the whole layer.
        const bool prune = !batch && il == cfg.num_hidden_layers - 1 && !deepstack;
        Tensor h = g.rms_norm("input_norm", x, l.input_norm.data, eps);  // [n, d]
        const int q_cols = n_heads * head_dim;
        // A decode batch does the norms and RoPE in its attention nodes (batch_attention).
        auto [q, k, v] = project_qkv(g, cfg, l, h, n, cos, sin, !batch);
        graph::AttentionOptions ao{.n_heads = n_heads,
                                   .n_kv_heads = n_kv_heads,
                                   .head_dim = head_dim,
                                   .scale = scale,
                                   .causal = true,
                                   .pos0 = in.pos0};
        Tensor a;  // [x_rows, heads*hd]
        if (batch) {
            a = batch_attention(g, in, il, l, eps, q, k, v, ao);
        } else {
            const graph::KvLayerView cache = kv.layer(il);
            g.store_kv("kv", k, v, cache, in.pos0, n_kv_heads, head_dim);
            if (prune && !in.want_logits) return Tensor{};
            if (prune && n > 1) {  // the last row alone, at its own position
                q = g.view(q, n - 1, 1, 0, q_cols);
                x = g.view(x, n - 1, 1, 0, d);
                x_rows = 1;
                ao.pos0 = in.pos0 + n - 1;
            }
            a = g.attention_cached("attn", q, cache, in.pos0 + n, ao);
        }
        x = g.matmul("attn_res", a, weight_ref(l.o), {.residual = x});  // [x_rows, d]
        h = g.rms_norm("post_norm", x, l.post_norm.data, eps);
        Tensor u =
            g.matmul_gated("gate_up", h, weight_ref(l.gate), weight_ref(l.up));  // [x_rows, d_ff]
        x = g.matmul(deepstack ? "mlp_res" : "out", u, weight_ref(l.down), {.residual = x});
        if (deepstack) {  // mirrors Qwen3VLTextModel._deepstack_process
            Tensor ds = g.input("deepstack", in.deepstack[il], in.n_visual, d);
            g.add_rows("out", x, ds, in.visual_rows);
        }
    }
    if (!in.want_logits) return Tensor{};
    g.set_scope("text");
    Tensor last = batch ? x : g.view(x, x_rows - 1, 1, 0, d);  // [1, d] or the whole batch
    return text_logits(g, cfg, w, last, in.lm_head);
}

}  // namespace qvl::model
