#include "graph/planner.h"

#include <algorithm>

namespace qvl::graph {
namespace {

constexpr std::size_t kAlign = 64;

std::size_t bytes_of(const TensorDesc& d) {
    const std::size_t b = std::size_t(d.rows) * std::size_t(d.stride) * sizeof(float);
    return (b + kAlign - 1) / kAlign * kAlign;
}

}  // namespace

std::size_t Planner::plan(Graph& g) {
    const int n_nodes = int(g.nodes.size());
    const int n_tensors = int(g.tensors.size());
    first_.assign(n_tensors, -1);
    last_.assign(n_tensors, -1);
    auto touch = [&](Tensor t, int node) {
        if (!t.valid()) return;
        std::ptrdiff_t off = 0;
        const int root = g.root_of(t.id, &off);
        if (g.tensors[root].kind != TensorKind::kActivation) return;
        if (first_[root] < 0) first_[root] = node;
        last_[root] = std::max(last_[root], node);
    };
    for (int i = 0; i < n_nodes; ++i) {
        const Node& n = g.nodes[i];
        for (const Tensor& t : n.in) touch(t, i);
        touch(n.out, i);
    }
    order_.clear();
    for (int t = 0; t < n_tensors; ++t) {
        if (first_[t] < 0) continue;
        if (g.tensors[t].keep) last_[t] = n_nodes;
        order_.push_back(t);
    }
    // Order of first use, ties by id (std::sort, unlike stable_sort, needs no buffer).
    std::sort(order_.begin(), order_.end(),
              [&](int a, int b) { return first_[a] != first_[b] ? first_[a] < first_[b] : a < b; });

    // At each tensor's first use: free blocks that died before it, then first fit.
    live_.clear();
    std::size_t total = 0;
    for (int t : order_) {
        const int now = first_[t];
        live_.erase(std::remove_if(live_.begin(), live_.end(),
                                   [&](const Block& b) { return b.last_use < now; }),
                    live_.end());
        std::sort(live_.begin(), live_.end(),
                  [](const Block& a, const Block& b) { return a.offset < b.offset; });
        const std::size_t size = bytes_of(g.tensors[t]);
        std::size_t offset = 0;
        for (const Block& b : live_) {
            if (offset + size <= b.offset) break;
            offset = std::max(offset, b.offset + b.size);
        }
        g.tensors[t].arena_offset = offset;
        live_.push_back({offset, size, last_[t]});
        total = std::max(total, offset + size);
    }
    return total;
}

}  // namespace qvl::graph
