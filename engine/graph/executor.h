// Runs a planned graph: resolves tensor addresses (arena, external, views), then walks the
// nodes in order, splitting each op's work over the thread pool. Kernels see only pointers
// and shapes. Optional: per-op-kind and per-layer timing (QVL_PROFILE), and an observer that
// sees every node's output by name (traces and golden tests).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "base/thread_pool.h"
#include "graph/graph.h"
#include "kernels/gemm_run.h"
#include "kernels/kernel_table.h"

namespace qvl::graph {

struct Profile {
    std::array<double, std::size_t(OpKind::kCount)> ms_by_op{};
    std::array<long, std::size_t(OpKind::kCount)> calls_by_op{};
    std::map<std::string, double> ms_by_layer;  // "text.layers.3"
    std::map<std::string, double> ms_by_node;   // "text.layers.*.gate_up": one node of every layer
    void clear() { *this = Profile(); }
    // Human-readable table, slowest first.
    std::string format() const;
};

// Sees a node output: full name ("vision.blocks.3.out"), data and shape.
using Observer = std::function<void(const std::string& name, const float* data, int rows, int cols,
                                    std::ptrdiff_t stride)>;

class Executor {
  public:
    Executor(base::ThreadPool* pool, const kernels::KernelTable& table)
        : pool_(pool), table_(&table) {}

    void enable_profile(bool on) { profile_on_ = on; }
    const Profile& profile() const { return profile_; }
    Profile& profile() { return profile_; }
    void set_observer(Observer observer) { observer_ = std::move(observer); }

    // Runs g with activations placed in arena (>= Planner::plan(g) bytes, 64-byte aligned).
    void run(const Graph& g, std::byte* arena) { run_range(g, arena, 0, g.nodes.size()); }

    // Runs the nodes [first, last) of g in order: a graph run in pieces, with the arena left
    // untouched in between, computes exactly what run() computes (the same nodes, the same
    // kernels). Stops early, after at least one node, once base::now_ms() reaches deadline_ms.
    // Returns the index of the next node to run (last when the range is done).
    std::size_t run_range(const Graph& g, std::byte* arena, std::size_t first, std::size_t last,
                          double deadline_ms = kNoDeadline);
    static constexpr double kNoDeadline = 1e300;

    // Address of tensor t of the last graph run (valid while the arena is untouched).
    float* data(const Graph& g, Tensor t, std::byte* arena) const;

    static std::string full_name(const Node& n);

  private:
    // Nodes [first, end): one op by its params, or a group of independent attention nodes as
    // one job (executor.cpp).
    void run_nodes(const Graph& g, std::size_t first, std::size_t end, std::byte* arena);

    base::ThreadPool* pool_;
    const kernels::KernelTable* table_;
    bool profile_on_ = false;
    Profile profile_;
    Observer observer_;
    kernels::GemmRunner gemm_runner_;       // its shared A panels outlive one GEMM
    std::uint64_t scratch_generation_ = 0;  // kernels::scratch_generation() when last levelled
};

}  // namespace qvl::graph
