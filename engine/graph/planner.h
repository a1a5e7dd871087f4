// The planner gives every activation tensor an offset in one arena: liveness from first to
// last use (views count as uses of what they view; kept tensors live to the end), then
// first-fit placement in order of first use. Tensors live at the same time never overlap;
// offsets are 64-byte aligned. A Planner reuses its scratch, so planning a graph of a size it
// has seen before allocates nothing (the decode loop relies on that).
#pragma once

#include <cstddef>
#include <vector>

#include "graph/graph.h"

namespace qvl::graph {

class Planner {
  public:
    // Assigns arena_offset to every activation of g; returns the arena bytes needed.
    std::size_t plan(Graph& g);

  private:
    struct Block {
        std::size_t offset, size;
        int last_use;
    };
    std::vector<int> first_, last_, order_;
    std::vector<Block> live_;
};

}  // namespace qvl::graph
