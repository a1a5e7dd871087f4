#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>

namespace qvl::model {

using graph::Tensor;
using kernels::GemmActivation;

namespace {

// mirrors Qwen3VLVisionPatchMerger: LayerNorm over hidden (before the 2x2 concat) or over
// 4 * hidden (after it, "postshuffle"), then fc1 -> exact GELU -> fc2.
Tensor patch_merger(graph::GraphBuilder& g, Tensor x, const MergerWeights& w, int merge_rows,
                    bool postshuffle, float eps) {
    const int n = g.desc(x).rows;
    const int hidden = g.desc(x).cols;
    Tensor h;
    if (postshuffle) {
        h = g.reshape(x, n / merge_rows, hidden * merge_rows);  // [n/4, 4*hidden]
        h = g.layer_norm("norm", h, w.norm_w.data, w.norm_b.data, eps);
    } else {
        h = g.layer_norm("norm", x, w.norm_w.data, w.norm_b.data, eps);  // [n, hidden]
        h = g.reshape(h, n / merge_rows, hidden * merge_rows);           // [n/4, 4*hidden]
    }
    h = g.matmul("fc1", h, weight_ref(w.fc1),
                 {.bias = w.fc1_b.data, .act = GemmActivation::kGeluErf});
    return g.matmul("out", h, weight_ref(w.fc2), {.bias = w.fc2_b.data});  // [n/4, out_hidden]
}

}  // namespace

// mirrors Qwen3VLVisionModel.forward for one image
VisionGraphOutputs build_vision_graph(graph::GraphBuilder& g, const VisionConfig& cfg,
                                      const VisionWeights& w, const VisionGraphInputs& in) {
    const int n = in.n_patches;
    const int d = cfg.hidden_size;
    const int n_heads = cfg.num_heads;
    const int head_dim = cfg.head_dim();
    const int merge_rows = cfg.spatial_merge_size * cfg.spatial_merge_size;
    const float eps = cfg.layer_norm_eps;
    const int patch_cols = w.patch_embed.cols;
    VisionGraphOutputs out;

    g.set_scope("vision");
    Tensor pos = g.input("pos_embed", in.pos_embed, n, d);           // [n, d]
    Tensor cos = g.input("rope_cos", in.rope_cos, n, head_dim / 2);  // [n, hd/2]
    Tensor sin = g.input("rope_sin", in.rope_sin, n, head_dim / 2);
    Tensor x;                 // [n, d]
    if (in.rgb != nullptr) {  // fused: patches gathered from the image inside the GEMM packing
        x = g.patch_embed("patch_embed", in.rgb, in.image_height, in.image_width, in.lut,
                          cfg.patch_size, cfg.temporal_patch_size, cfg.spatial_merge_size,
                          weight_ref(w.patch_embed), w.patch_embed_b.data);
    } else {
        Tensor pixels = g.input("pixel_values", in.pixel_values, n, patch_cols);  // [n, 3*t*p*p]
        x = g.matmul("patch_embed", pixels, weight_ref(w.patch_embed),
                     {.bias = w.patch_embed_b.data});
    }
    x = g.add("embed", x, pos);  // [n, d]

    const float scale = 1.0f / std::sqrt(float(head_dim));
    out.deepstack.resize(cfg.deepstack_visual_indexes.size());
    for (int i = 0; i < cfg.depth; ++i) {
        const VisionBlockWeights& b = w.blocks[i];
        g.set_scope("vision.blocks", i);  // mirrors Qwen3VLVisionBlock.forward
        Tensor h = g.layer_norm("norm1", x, b.norm1_w.data, b.norm1_b.data, eps);    // [n, d]
        Tensor qkv = g.matmul("qkv", h, weight_ref(b.qkv), {.bias = b.qkv_b.data});  // [n, 3d]
        Tensor q = g.view(qkv, 0, n, 0, d);                                          // [n, d]
        Tensor k = g.view(qkv, 0, n, d, d);
        Tensor v = g.view(qkv, 0, n, 2 * d, d);
        g.rope("q_rope", q, cos, sin, n_heads, head_dim);
        g.rope("k_rope", k, cos, sin, n_heads, head_dim);
        Tensor a = g.attention("attn", q, k, v,
                               {.n_heads = n_heads,
                                .n_kv_heads = n_heads,
                                .head_dim = head_dim,
                                .scale = scale});  // [n, d]
        x = g.matmul("attn_res", a, weight_ref(b.proj), {.bias = b.proj_b.data, .residual = x});
        h = g.layer_norm("norm2", x, b.norm2_w.data, b.norm2_b.data, eps);
        Tensor u = g.matmul("fc1", h, weight_ref(b.fc1),
                            {.bias = b.fc1_b.data, .act = GemmActivation::kGeluTanh});  // [n, d_ff]
        x = g.matmul("out", u, weight_ref(b.fc2), {.bias = b.fc2_b.data, .residual = x});  // [n, d]

        const auto& taps = cfg.deepstack_visual_indexes;
        const auto it = std::find(taps.begin(), taps.end(), i);
        if (it != taps.end()) {
            const int j = int(it - taps.begin());
            g.set_scope("vision.deepstack", j);
            Tensor ds = patch_merger(g, x, w.deepstack[j], merge_rows, true, eps);
            g.keep(ds);
            out.deepstack[j] = ds;
        }
    }
    g.set_scope("vision.merger");
    out.image_embeds = patch_merger(g, x, w.merger, merge_rows, false, eps);  // [n/4, out]
    g.keep(out.image_embeds);
    return out;
}

}  // namespace qvl::model
