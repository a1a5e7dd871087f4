// Executor::run_range: a graph run in pieces (node ranges, or a deadline that stops after every
// node) computes exactly what one run computes, and the observer sees every node once, in order.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/bf16.h"
#include "base/thread_pool.h"
#include "graph/builder.h"
#include "graph/executor.h"
#include "graph/planner.h"
#include "kernels/isa.h"

namespace qvl::graph {
namespace {

struct Chain {
    std::vector<float> x;
    std::vector<base::bf16> w;
    Graph g;
    Tensor out;
};

// matmul -> add -> matmul -> add ...: every node depends on the one before.
void build_chain(Chain* c) {
    const int m = 7, k = 17;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1, 1);
    c->x.resize(m * k);
    c->w.resize(k * k);
    for (float& v : c->x) v = u(rng);
    for (base::bf16& v : c->w) v = base::f32_to_bf16(u(rng) * 0.3f);
    GraphBuilder b(&c->g, kernels::GemmPrecision::kF32);
    Tensor t = b.input("x", c->x.data(), m, k);
    const WeightRef wr{
        .data = c->w.data(), .type = kernels::WeightType::kBF16, .ld = k, .rows = k, .cols = k};
    for (int i = 0; i < 4; ++i) {
        Tensor y = b.matmul("y", t, wr, {});
        t = b.add("z", y, t);
    }
    c->out = t;
    b.keep(t);
}

TEST(Executor, RunInPiecesMatchesOneRun) {
    Chain c;
    build_chain(&c);
    Planner planner;
    const std::size_t bytes = planner.plan(c.g);
    auto whole_arena = base::AlignedBuffer::allocate(bytes, "arena");
    auto piece_arena = base::AlignedBuffer::allocate(bytes, "arena");
    ASSERT_TRUE(whole_arena.ok() && piece_arena.ok());
    base::ThreadPool pool(2);
    Executor exec(&pool, kernels::best_table());
    exec.run(c.g, whole_arena->data());
    const std::size_t n_out = 7 * 17;
    std::vector<float> whole(n_out);
    std::memcpy(whole.data(), exec.data(c.g, c.out, whole_arena->data()), n_out * sizeof(float));

    std::vector<std::string> seen;
    exec.set_observer([&](const std::string& name, const float*, int, int, std::ptrdiff_t) {
        seen.push_back(name);
    });
    // A deadline already past: one node per call, never zero.
    std::size_t next = 0, calls = 0;
    while (next < c.g.nodes.size()) {
        const std::size_t after = exec.run_range(c.g, piece_arena->data(), next, c.g.nodes.size(),
                                                 /*deadline_ms=*/0.0);
        ASSERT_EQ(after, next + 1);
        next = after;
        ++calls;
    }
    EXPECT_EQ(calls, c.g.nodes.size());
    ASSERT_EQ(seen.size(), c.g.nodes.size());
    for (std::size_t i = 0; i < seen.size(); ++i) {
        EXPECT_EQ(seen[i], Executor::full_name(c.g.nodes[i]));
    }
    EXPECT_EQ(0, std::memcmp(whole.data(), exec.data(c.g, c.out, piece_arena->data()),
                             n_out * sizeof(float)));

    // Explicit ranges, and an empty one.
    std::memset(piece_arena->data(), 0, bytes);
    EXPECT_EQ(exec.run_range(c.g, piece_arena->data(), 0, 0), 0u);
    EXPECT_EQ(exec.run_range(c.g, piece_arena->data(), 0, 3), 3u);
    EXPECT_EQ(exec.run_range(c.g, piece_arena->data(), 3, c.g.nodes.size()), c.g.nodes.size());
    EXPECT_EQ(0, std::memcmp(whole.data(), exec.data(c.g, c.out, piece_arena->data()),
                             n_out * sizeof(float)));
}

}  // namespace
}  // namespace qvl::graph
