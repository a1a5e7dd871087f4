// Session::fork_slot: one slot's state copied into another (n choices share one prefill).
#include <algorithm>

#include "runtime/session.h"

namespace qvl::runtime {

void Session::fork_slot(int from, int to) {
    if (from == to || from < 0 || to < 0 || from >= slots() || to >= slots()) return;
    kv_.copy_slot(from, to);
    history_[std::size_t(to)] = history_[std::size_t(from)];
    const std::span<const float> row = logits(from);  // the full row, whatever the screen did
    std::copy(row.begin(), row.end(),
              logits_.begin() + std::ptrdiff_t(to) * std::ptrdiff_t(row.size()));
    logits_ready_[std::size_t(to)] = 1;
}

}  // namespace qvl::runtime
