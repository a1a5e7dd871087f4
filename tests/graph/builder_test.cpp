// GraphBuilder: the shapes each op method gives its output, the names and scopes its nodes
// carry (the trace names), views as metadata, and the shape checks that stop model code with a
// mismatched graph (QVL_CHECK aborts with the op's message).
#include "graph/builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace qvl::graph {
namespace {

using kernels::GemmPrecision;

WeightRef weight(int rows, int cols) {
    static const std::vector<float> storage(4096, 0.0f);
    return {.data = storage.data(),
            .type = kernels::WeightType::kF32,
            .ld = cols,
            .rows = rows,
            .cols = cols};
}

class BuilderTest : public ::testing::Test {
  protected:
    Graph g;
    GraphBuilder b{&g, GemmPrecision::kF32};
    std::vector<float> buffer = std::vector<float>(4096, 0.0f);
};

TEST_F(BuilderTest, OpsGiveTheirOutputShapes) {
    const Tensor x = b.input("x", buffer.data(), 5, 16);
    EXPECT_EQ(b.desc(x).kind, TensorKind::kExternal);
    EXPECT_EQ(b.desc(x).stride, 16);
    const Tensor y = b.matmul("proj", x, weight(24, 16));
    EXPECT_EQ(b.desc(y).rows, 5);
    EXPECT_EQ(b.desc(y).cols, 24);
    EXPECT_EQ(b.desc(y).kind, TensorKind::kActivation);
    const Tensor gated = b.matmul_gated("mlp", x, weight(40, 16), weight(40, 16));
    EXPECT_EQ(b.desc(gated).cols, 40);
    const Tensor n = b.rms_norm("norm", y, nullptr, 1e-6f, 8);
    EXPECT_EQ(b.desc(n).cols, 24);
    const Tensor q = b.activation("q", 5, 4 * 8);
    const Tensor k = b.activation("k", 7, 2 * 8);
    const Tensor v = b.activation("v", 7, 2 * 8);
    const Tensor att =
        b.attention("attn", q, k, v, {.n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .scale = 0.5f});
    EXPECT_EQ(b.desc(att).rows, 5);
    EXPECT_EQ(b.desc(att).cols, 32);
    EXPECT_EQ(std::get<op::Attention>(g.nodes.back().p).n_kv, 7);
    const std::int32_t ids[3] = {0, 2, 1};
    const Tensor e = b.embed("embed", weight(3, 10), ids, 3);
    EXPECT_EQ(b.desc(e).rows, 3);
    EXPECT_EQ(b.desc(e).cols, 10);
    // In-place ops return nothing new: their node writes its input.
    const Tensor cos = b.activation("cos", 5, 4);
    b.rope("rope", q, cos, cos, 4, 8);
    EXPECT_EQ(g.nodes.back().out.id, q.id);
    EXPECT_EQ(g.nodes.back().op, OpKind::kRope);
}

TEST_F(BuilderTest, NodesCarryScopeLayerAndName) {
    const Tensor x = b.input("x", buffer.data(), 2, 16);
    b.set_scope("text.layers", 3);
    b.matmul("q_proj", x, weight(16, 16));
    b.set_scope("text");
    b.add("residual", x, x);
    ASSERT_EQ(g.nodes.size(), 2u);
    EXPECT_EQ(std::string(g.nodes[0].scope), "text.layers");
    EXPECT_EQ(g.nodes[0].layer, 3);
    EXPECT_EQ(std::string(g.nodes[0].name), "q_proj");
    EXPECT_EQ(std::string(b.desc(g.nodes[0].out).name), "q_proj");
    EXPECT_EQ(g.nodes[0].op, OpKind::kMatmul);
    EXPECT_EQ(std::string(g.nodes[1].scope), "text");
    EXPECT_EQ(g.nodes[1].layer, -1);
    EXPECT_EQ(g.nodes[1].op, OpKind::kAdd);
}

TEST_F(BuilderTest, ViewsAndReshapesAreMetadata) {
    const Tensor x = b.activation("x", 6, 10);
    const std::size_t nodes = g.nodes.size();
    const Tensor v = b.view(x, 2, 3, 4, 5);
    EXPECT_EQ(g.nodes.size(), nodes);  // no node
    EXPECT_EQ(b.desc(v).kind, TensorKind::kView);
    EXPECT_EQ(b.desc(v).rows, 3);
    EXPECT_EQ(b.desc(v).cols, 5);
    EXPECT_EQ(b.desc(v).stride, 10);
    EXPECT_EQ(b.desc(v).view_offset, 2 * 10 + 4);
    const Tensor vv = b.view(v, 1, 1, 1, 2);
    std::ptrdiff_t offset = 0;
    EXPECT_EQ(g.root_of(vv.id, &offset), x.id);
    EXPECT_EQ(offset, 24 + 10 + 1);
    const Tensor r = b.reshape(x, 3, 20);
    EXPECT_EQ(b.desc(r).stride, 20);
    b.keep(vv);  // keeping a view keeps its root alive
    EXPECT_TRUE(g.tensors[x.id].keep);
}

using BuilderDeathTest = BuilderTest;

TEST_F(BuilderDeathTest, ShapeMismatchesStopTheProgram) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const Tensor x = b.input("x", buffer.data(), 4, 16);
    const Tensor y = b.activation("y", 4, 8);
    EXPECT_DEATH(b.matmul("m", x, weight(8, 12)), "matmul: x cols != weight cols");
    EXPECT_DEATH(b.matmul("m", x, weight(8, 16), {.residual = x}), "matmul: residual cols");
    EXPECT_DEATH(b.matmul_gated("g", x, weight(8, 16), weight(9, 16)), "gated: pair");
    EXPECT_DEATH(b.add("a", x, y), "add: shapes");
    EXPECT_DEATH(b.rms_norm("n", x, nullptr, 1e-6f, 5), "group must divide cols");
    EXPECT_DEATH(b.view(x, 2, 3, 0, 4), "view rows out of range");
    EXPECT_DEATH(b.view(x, 0, 1, 10, 7), "view cols out of range");
    EXPECT_DEATH(b.reshape(b.view(x, 0, 2, 0, 8), 1, 16), "reshape of a strided tensor");
    EXPECT_DEATH(b.reshape(x, 5, 13), "reshape size");
    EXPECT_DEATH(b.attention("a", x, y, y, {.n_heads = 3, .n_kv_heads = 1, .head_dim = 8}),
                 "attention: q cols");
    const Tensor cos = b.activation("cos", 3, 4);
    EXPECT_DEATH(b.rope("r", x, cos, cos, 2, 8), "rope: tables");
    EXPECT_DEATH(b.add_rows("r", x, y, nullptr), "add_rows: cols");
}

}  // namespace
}  // namespace qvl::graph
