// Graph runtime: the planner never lets two tensors that are live at the same time share
// bytes (property test on random graphs), offsets are aligned, and the executor runs small
// graphs exactly as direct kernel calls do.
#include "graph/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/bf16.h"
#include "base/thread_pool.h"
#include "graph/builder.h"
#include "graph/executor.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/scratch.h"

namespace qvl::graph {
namespace {

struct Interval {
    int first = -1, last = -1;
};

// Liveness recomputed independently of the planner: every node that reads or writes a tensor
// (through any view) keeps its root alive; kept tensors live to the end.
std::vector<Interval> liveness(const Graph& g) {
    std::vector<Interval> live(g.tensors.size());
    auto touch = [&](Tensor t, int node) {
        if (!t.valid()) return;
        std::ptrdiff_t off = 0;
        const int root = g.root_of(t.id, &off);
        if (g.tensors[root].kind != TensorKind::kActivation) return;
        if (live[root].first < 0) live[root].first = node;
        live[root].last = std::max(live[root].last, node);
    };
    for (int i = 0; i < int(g.nodes.size()); ++i) {
        for (Tensor t : g.nodes[i].in) touch(t, i);
        touch(g.nodes[i].out, i);
    }
    for (std::size_t t = 0; t < live.size(); ++t) {
        if (g.tensors[t].keep && live[t].first >= 0) live[t].last = int(g.nodes.size());
    }
    return live;
}

TEST(Planner, LiveTensorsNeverOverlapOnRandomGraphs) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        Graph g;
        GraphBuilder b(&g, kernels::GemmPrecision::kF32);
        std::vector<float> input_data(64 * 64, 1.0f);
        std::vector<Tensor> pool;
        const int cols = 1 + int(rng() % 48);
        pool.push_back(b.input("x", input_data.data(), 1 + int(rng() % 64), cols));
        const int n_ops = 1 + int(rng() % 40);
        for (int i = 0; i < n_ops; ++i) {
            // Each op adds two earlier tensors of the same shape (or a tensor to itself), or
            // views rows of one: a random DAG with random lifetimes.
            const Tensor a = pool[rng() % pool.size()];
            const TensorDesc& da = b.desc(a);
            if (rng() % 4 == 0 && da.rows > 1) {
                pool.push_back(b.view(a, 0, da.rows / 2, 0, da.cols));
                continue;
            }
            Tensor other = a;
            for (int tries = 0; tries < 4; ++tries) {
                const Tensor c = pool[rng() % pool.size()];
                if (b.desc(c).rows == da.rows && b.desc(c).cols == da.cols) other = c;
            }
            pool.push_back(b.add("add", a, other));
            if (rng() % 8 == 0) b.keep(pool.back());
        }
        Planner planner;
        const std::size_t total = planner.plan(g);
        const std::vector<Interval> live = liveness(g);
        for (std::size_t i = 0; i < g.tensors.size(); ++i) {
            const TensorDesc& di = g.tensors[i];
            if (di.kind != TensorKind::kActivation || live[i].first < 0) continue;
            const std::size_t bytes_i = std::size_t(di.rows) * di.stride * sizeof(float);
            EXPECT_EQ(di.arena_offset % 64, 0u);
            EXPECT_LE(di.arena_offset + bytes_i, total);
            for (std::size_t j = i + 1; j < g.tensors.size(); ++j) {
                const TensorDesc& dj = g.tensors[j];
                if (dj.kind != TensorKind::kActivation || live[j].first < 0) continue;
                const bool overlap_in_time =
                    live[i].first <= live[j].last && live[j].first <= live[i].last;
                if (!overlap_in_time) continue;
                const std::size_t bytes_j = std::size_t(dj.rows) * dj.stride * sizeof(float);
                const bool disjoint = di.arena_offset + bytes_i <= dj.arena_offset ||
                                      dj.arena_offset + bytes_j <= di.arena_offset;
                ASSERT_TRUE(disjoint) << "trial " << trial << ": tensors " << i << " and " << j;
            }
        }
    }
}

TEST(Planner, ReusesMemoryOfDeadTensors) {
    Graph g;
    GraphBuilder b(&g, kernels::GemmPrecision::kF32);
    std::vector<float> x_data(100 * 16, 1.0f);
    Tensor x = b.input("x", x_data.data(), 100, 16);
    for (int i = 0; i < 10; ++i) x = b.add("add", x, x);  // each result dies after the next op
    Planner planner;
    // At most two [100, 16] tensors are live at once.
    EXPECT_LE(planner.plan(g), 2 * 100 * 16 * sizeof(float));
}

TEST(Executor, MatchesDirectKernelCalls) {
    const int m = 5, n = 7, k = 9;
    std::vector<float> x(m * k), bias(n);
    std::vector<base::bf16> w(n * k);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& v : x) v = u(rng);
    for (float& v : bias) v = u(rng);
    for (base::bf16& v : w) v = base::f32_to_bf16(u(rng));

    Graph g;
    GraphBuilder b(&g, kernels::GemmPrecision::kF32);
    Tensor xt = b.input("x", x.data(), m, k);
    const WeightRef wr{
        .data = w.data(), .type = kernels::WeightType::kBF16, .ld = k, .rows = n, .cols = k};
    Tensor y = b.matmul("y", xt, wr, {.bias = bias.data()});
    Tensor z = b.add("z", y, y);
    b.keep(z);
    Planner planner;
    auto arena = base::AlignedBuffer::allocate(planner.plan(g), "arena");
    ASSERT_TRUE(arena.ok());
    base::ThreadPool pool(2);
    Executor exec(&pool, kernels::kernels_for(kernels::Isa::kScalar));
    exec.run(g, arena->data());
    const float* got = exec.data(g, z, arena->data());

    std::vector<float> want(m * n);
    kernels::ref::gemm_f32({.m = m,
                            .n = n,
                            .k = k,
                            .a = x.data(),
                            .lda = k,
                            .w = w.data(),
                            .ldw = k,
                            .w_type = kernels::WeightType::kBF16,
                            .bias = bias.data(),
                            .c = want.data(),
                            .ldc = n});
    for (int i = 0; i < m * n; ++i) EXPECT_NEAR(got[i], 2 * want[i], 1e-5f) << i;
}

TEST(Executor, LeavesEveryThreadWithTheScratchItsRunNeeded) {
    // One small matmul is one task, run by the calling thread alone; afterwards the worker must
    // hold the same scratch, or its first such task in a later run would allocate.
    const int m = 3, n = 40, k = 700;
    std::vector<float> x(m * k, 0.5f);
    std::vector<base::bf16> w(n * k, base::f32_to_bf16(0.25f));
    Graph g;
    GraphBuilder b(&g, kernels::GemmPrecision::kF32);
    Tensor xt = b.input("x", x.data(), m, k);
    const WeightRef wr{
        .data = w.data(), .type = kernels::WeightType::kBF16, .ld = k, .rows = n, .cols = k};
    b.keep(b.matmul("y", xt, wr, {}));
    Planner planner;
    auto arena = base::AlignedBuffer::allocate(planner.plan(g), "arena");
    ASSERT_TRUE(arena.ok());
    base::ThreadPool pool(2);
    Executor exec(&pool, kernels::best_table());
    const std::uint64_t before = kernels::scratch_allocations();
    exec.run(g, arena->data());
    EXPECT_GT(kernels::scratch_allocations(), before) << "the run should have needed scratch";
    const std::uint64_t after_run = kernels::scratch_allocations();
    pool.run_on_each_thread([](int) { kernels::reserve_thread_scratch(); });
    EXPECT_EQ(kernels::scratch_allocations(), after_run) << "a thread was left without scratch";
}

}  // namespace
}  // namespace qvl::graph
