#include "graph/builder.h"

#include "base/check.h"

namespace qvl::graph {

namespace {
bool is_contiguous(const TensorDesc& d) { return d.stride == d.cols; }

op::Attention attention_params(const AttentionOptions& o, kernels::GemmPrecision precision,
                               int n_kv) {
    return {.n_heads = o.n_heads,
            .n_kv_heads = o.n_kv_heads,
            .head_dim = o.head_dim,
            .scale = o.scale,
            .causal = o.causal,
            .pos0 = o.pos0,
            .n_kv = n_kv,
            .precision = precision};
}
}  // namespace

GraphBuilder::GraphBuilder(Graph* graph, kernels::GemmPrecision matmul_precision,
                           kernels::GemmPrecision attention_precision)
    : graph_(graph), precision_(matmul_precision), attention_precision_(attention_precision) {}

Tensor GraphBuilder::new_tensor(const TensorDesc& d) {
    graph_->tensors.push_back(d);
    return Tensor{int(graph_->tensors.size()) - 1};
}

Node& GraphBuilder::new_node(const char* name, Tensor out, const NodeParams& params) {
    Node& n = graph_->nodes.emplace_back();
    n.op = OpKind(params.index());
    n.p = params;
    n.scope = scope_;
    n.layer = layer_;
    n.name = name;
    n.out = out;
    return n;
}

Tensor GraphBuilder::input(const char* name, float* data, int rows, int cols,
                           std::ptrdiff_t stride) {
    QVL_CHECK(data != nullptr || rows == 0, "input without data");
    return new_tensor({.name = name,
                       .rows = rows,
                       .cols = cols,
                       .stride = stride ? stride : cols,
                       .kind = TensorKind::kExternal,
                       .external = data});
}

Tensor GraphBuilder::activation(const char* name, int rows, int cols) {
    QVL_CHECK(rows >= 0 && cols > 0, "bad activation shape");
    return new_tensor({.name = name, .rows = rows, .cols = cols, .stride = cols});
}

Tensor GraphBuilder::view(Tensor t, int row0, int rows, int col0, int cols) {
    const TensorDesc& d = desc(t);
    QVL_CHECK(row0 >= 0 && rows >= 0 && row0 + rows <= d.rows, "view rows out of range");
    QVL_CHECK(col0 >= 0 && cols > 0 && col0 + cols <= d.cols, "view cols out of range");
    return new_tensor({.name = d.name,
                       .rows = rows,
                       .cols = cols,
                       .stride = d.stride,
                       .kind = TensorKind::kView,
                       .parent = t.id,
                       .view_offset = row0 * d.stride + col0});
}

Tensor GraphBuilder::reshape(Tensor t, int rows, int cols) {
    const TensorDesc& d = desc(t);
    QVL_CHECK(is_contiguous(d), "reshape of a strided tensor");
    QVL_CHECK(std::int64_t(rows) * cols == std::int64_t(d.rows) * d.cols, "reshape size");
    return new_tensor({.name = d.name,
                       .rows = rows,
                       .cols = cols,
                       .stride = cols,
                       .kind = TensorKind::kView,
                       .parent = t.id,
                       .view_offset = 0});
}

void GraphBuilder::keep(Tensor t) {
    std::ptrdiff_t offset = 0;
    const int root = graph_->root_of(t.id, &offset);
    graph_->tensors[root].keep = true;
}

Tensor GraphBuilder::embed(const char* name, const WeightRef& table, const std::int32_t* ids,
                           int n_ids) {
    Tensor out = activation(name, n_ids, table.cols);
    new_node(name, out, op::Embed{.table = table, .ids = ids});
    return out;
}

Tensor GraphBuilder::patch_embed(const char* name, const std::uint8_t* rgb, int height, int width,
                                 const float* lut, int patch, int temporal, int merge,
                                 const WeightRef& w, const float* bias) {
    QVL_CHECK(height % (patch * merge) == 0 && width % (patch * merge) == 0, "patch_embed: size");
    QVL_CHECK(w.cols == 3 * temporal * patch * patch, "patch_embed: weight cols");
    Tensor out = activation(name, (height / patch) * (width / patch), w.rows);
    new_node(name, out,
             op::PatchEmbed{.w = w,
                            .bias = bias,
                            .rgb = rgb,
                            .height = height,
                            .width = width,
                            .patch = patch,
                            .temporal = temporal,
                            .merge = merge,
                            .lut = lut,
                            .precision = precision_});
    return out;
}

Tensor GraphBuilder::matmul(const char* name, Tensor x, const WeightRef& w,
                            const MatmulOptions& options) {
    QVL_CHECK(desc(x).cols == w.cols, "matmul: x cols != weight cols");
    Tensor out = activation(name, desc(x).rows, w.rows);
    if (options.residual.valid()) {
        QVL_CHECK(desc(options.residual).rows == desc(x).rows, "matmul: residual rows");
        QVL_CHECK(desc(options.residual).cols == w.rows, "matmul: residual cols");
    }
    Node& n = new_node(
        name, out,
        op::Matmul{.w = w, .bias = options.bias, .act = options.act, .precision = precision_});
    n.in[0] = x;
    n.in[1] = options.residual;
    return out;
}

Tensor GraphBuilder::matmul_gated(const char* name, Tensor x, const WeightRef& gate,
                                  const WeightRef& up) {
    QVL_CHECK(desc(x).cols == gate.cols && gate.cols == up.cols, "gated: cols");
    QVL_CHECK(gate.rows == up.rows && gate.ld == up.ld && gate.type == up.type, "gated: pair");
    Tensor out = activation(name, desc(x).rows, gate.rows);
    Node& n = new_node(name, out, op::MatmulGated{.gate = gate, .up = up, .precision = precision_});
    n.in[0] = x;
    return out;
}

Tensor GraphBuilder::layer_norm(const char* name, Tensor x, const float* w, const float* b,
                                float eps) {
    Tensor out = activation(name, desc(x).rows, desc(x).cols);
    Node& n = new_node(name, out, op::LayerNorm{.w = w, .b = b, .eps = eps});
    n.in[0] = x;
    return out;
}

Tensor GraphBuilder::rms_norm(const char* name, Tensor x, const float* w, float eps, int group) {
    const TensorDesc& d = desc(x);
    if (group == 0) group = d.cols;
    QVL_CHECK(d.cols % group == 0, "rms_norm: group must divide cols");
    Tensor out = activation(name, d.rows, d.cols);
    Node& n = new_node(name, out, op::RmsNorm{.w = w, .eps = eps, .group = group});
    n.in[0] = x;
    return out;
}

void GraphBuilder::rope(const char* name, Tensor x, Tensor cos, Tensor sin, int n_heads,
                        int head_dim) {
    QVL_CHECK(desc(x).cols >= n_heads * head_dim, "rope: cols");
    QVL_CHECK(desc(cos).rows == desc(x).rows && desc(cos).cols == head_dim / 2, "rope: tables");
    Node& n = new_node(name, x, op::Rope{.n_heads = n_heads, .head_dim = head_dim});
    n.in[0] = x;
    n.in[1] = cos;
    n.in[2] = sin;
}

Tensor GraphBuilder::attention(const char* name, Tensor q, Tensor k, Tensor v,
                               const AttentionOptions& o) {
    QVL_CHECK(desc(q).cols == o.n_heads * o.head_dim, "attention: q cols");
    QVL_CHECK(desc(k).cols == o.n_kv_heads * o.head_dim, "attention: k cols");
    QVL_CHECK(desc(k).rows == desc(v).rows, "attention: k/v rows");
    Tensor out = activation(name, desc(q).rows, o.n_heads * o.head_dim);
    Node& n = new_node(name, out, attention_params(o, attention_precision_, desc(k).rows));
    n.in[0] = q;
    n.in[1] = k;
    n.in[2] = v;
    return out;
}

Tensor GraphBuilder::attention_cached(const char* name, Tensor q, const KvLayerView& kv, int n_kv,
                                      const AttentionOptions& o) {
    QVL_CHECK(desc(q).cols == o.n_heads * o.head_dim, "attention: q cols");
    Tensor out = activation(name, desc(q).rows, o.n_heads * o.head_dim);
    op::Attention p = attention_params(o, attention_precision_, n_kv);
    p.use_cache = true;
    p.kv = kv;
    Node& n = new_node(name, out, p);
    n.in[0] = q;
    return out;
}

void GraphBuilder::attention_decode_row(const char* name, Tensor q, Tensor k, Tensor v, Tensor out,
                                        const KvLayerView& kv,
                                        const op::Attention::DecodePrep& prep,
                                        const AttentionOptions& o) {
    const int q_cols = o.n_heads * o.head_dim, kv_cols = o.n_kv_heads * o.head_dim;
    QVL_CHECK(desc(q).rows == 1 && desc(q).cols == q_cols, "attention_decode_row: q");
    QVL_CHECK(desc(k).rows == 1 && desc(k).cols == kv_cols, "attention_decode_row: k");
    QVL_CHECK(desc(v).rows == 1 && desc(v).cols == kv_cols, "attention_decode_row: v");
    QVL_CHECK(desc(out).rows == 1 && desc(out).cols == q_cols, "attention_decode_row: out");
    QVL_CHECK(o.n_kv_heads > 0 && o.n_heads % o.n_kv_heads == 0, "attention_decode_row: heads");
    QVL_CHECK(prep.q_norm != nullptr && prep.k_norm != nullptr && prep.cos != nullptr &&
                  prep.sin != nullptr,
              "attention_decode_row: prep");
    op::Attention p = attention_params(o, attention_precision_, o.pos0 + 1);
    p.use_cache = true;
    p.kv = kv;
    p.prep = prep;
    Node& n = new_node(name, out, p);
    n.in[0] = q;
    n.in[1] = k;
    n.in[2] = v;
}

void GraphBuilder::store_kv(const char* name, Tensor k, Tensor v, const KvLayerView& kv, int pos0,
                            int n_kv_heads, int head_dim) {
    QVL_CHECK(desc(k).cols == n_kv_heads * head_dim && desc(v).cols == desc(k).cols, "store_kv");
    Node& n = new_node(
        name, k,
        op::StoreKv{.kv = kv, .pos0 = pos0, .n_kv_heads = n_kv_heads, .head_dim = head_dim});
    n.in[0] = k;
    n.in[1] = v;
}

Tensor GraphBuilder::add(const char* name, Tensor a, Tensor b) {
    QVL_CHECK(desc(a).rows == desc(b).rows && desc(a).cols == desc(b).cols, "add: shapes");
    Tensor out = activation(name, desc(a).rows, desc(a).cols);
    Node& n = new_node(name, out, op::Add{});
    n.in[0] = a;
    n.in[1] = b;
    return out;
}

void GraphBuilder::add_rows(const char* name, Tensor x, Tensor rows_src, const std::int32_t* rows) {
    QVL_CHECK(desc(x).cols == desc(rows_src).cols, "add_rows: cols");
    Node& n = new_node(name, x, op::AddRows{.rows = rows});
    n.in[0] = x;
    n.in[1] = rows_src;
}

void GraphBuilder::scatter_rows(const char* name, Tensor x, Tensor rows_src,
                                const std::int32_t* rows) {
    QVL_CHECK(desc(x).cols == desc(rows_src).cols, "scatter_rows: cols");
    Node& n = new_node(name, x, op::ScatterRows{.rows = rows});
    n.in[0] = x;
    n.in[1] = rows_src;
}

}  // namespace qvl::graph
