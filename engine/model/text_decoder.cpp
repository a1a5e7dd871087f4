#include "model/text_decoder.h"

#include <cmath>

#include "model/vision_encoder.h"

namespace qvl::model {

using graph::Tensor;

// mirrors Qwen3VLTextModel.forward (+ the lm_head of Qwen3VLForConditionalGeneration)
Tensor build_text_graph(graph::GraphBuilder& g, const TextConfig& cfg, const TextWeights& w,
                        const graph::KvCacheView& kv, const TextGraphInputs& in) {
    const int n = in.n_tokens;
    const int d = cfg.hidden_size;
    const int n_heads = cfg.num_attention_heads;
    const int n_kv_heads = cfg.num_key_value_heads;
    const int head_dim = cfg.head_dim;
    const float eps = cfg.rms_norm_eps;

    g.set_scope("text");
    Tensor cos = g.input("rope_cos", in.rope_cos, n, head_dim / 2);  // [n, hd/2]
    Tensor sin = g.input("rope_sin", in.rope_sin, n, head_dim / 2);
    Tensor x = g.embed("embed", weight_ref(w.embed), in.ids, n);  // [n, d]
    if (in.n_visual > 0) {
        Tensor feats = g.input("image_embeds", in.image_embeds, in.n_visual, d);
        g.scatter_rows("inputs_embeds", x, feats, in.visual_rows);
    }

    const float scale = 1.0f / std::sqrt(float(head_dim));
    for (int il = 0; il < cfg.num_hidden_layers; ++il) {
        const TextLayerWeights& l = w.layers[il];
        const graph::KvLayerView cache = kv.layer(il);
        g.set_scope("text.layers", il);  // mirrors Qwen3VLTextDecoderLayer.forward
        Tensor h = g.rms_norm("input_norm", x, l.input_norm.data, eps);  // [n, d]
        Tensor q = g.matmul("q", h, weight_ref(l.q));                    // [n, heads*hd]
        Tensor k = g.matmul("k", h, weight_ref(l.k));                    // [n, kv_heads*hd]
        Tensor v = g.matmul("v", h, weight_ref(l.v));                    // [n, kv_heads*hd]
        q = g.rms_norm("q_norm", q, l.q_norm.data, eps, head_dim);       // per head, before RoPE
        k = g.rms_norm("k_norm", k, l.k_norm.data, eps, head_dim);
        g.rope("q_rope", q, cos, sin, n_heads, head_dim);
        g.rope("k_rope", k, cos, sin, n_kv_heads, head_dim);
        g.store_kv("kv", k, v, cache, in.pos0, n_kv_heads, head_dim);
        Tensor a = g.attention_cached("attn", q, cache, in.pos0 + n,
                                      {.n_heads = n_heads,
                                       .n_kv_heads = n_kv_heads,
                                       .head_dim = head_dim,
                                       .scale = scale,
                                       .causal = true,
                                       .pos0 = in.pos0});               // [n, heads*hd]
        x = g.matmul("attn_res", a, weight_ref(l.o), {.residual = x});  // [n, d]
        h = g.rms_norm("post_norm", x, l.post_norm.data, eps);
        Tensor u = g.matmul_gated("gate_up", h, weight_ref(l.gate), weight_ref(l.up));  // [n, d_ff]
        const bool deepstack = in.n_visual > 0 && std::size_t(il) < in.deepstack.size();
        x = g.matmul(deepstack ? "mlp_res" : "out", u, weight_ref(l.down), {.residual = x});
        if (deepstack) {  // mirrors Qwen3VLTextModel._deepstack_process
            Tensor ds = g.input("deepstack", in.deepstack[il], in.n_visual, d);
            g.add_rows("out", x, ds, in.visual_rows);
        }
    }
    if (!in.want_logits) return Tensor{};
    g.set_scope("text");
    Tensor last = g.view(x, n - 1, 1, 0, d);  // [1, d]
    Tensor h = g.rms_norm("final_norm", last, w.final_norm.data, eps);
    Tensor logits = g.matmul("logits", h, weight_ref(w.lm_head));  // [1, vocab]
    g.keep(logits);
    return logits;
}

}  // namespace qvl::model
