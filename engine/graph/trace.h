// QVL_TRACE=dir: an executor observer that writes every node's output to dir/<name>.npy
// (float32 [rows, cols]), named like the reference's dumps ("vision.blocks.3.out",
// "text.layers.0.q_rope"), so a drift from a reference implementation is found by name.
#pragma once

#include <string>

#include "graph/executor.h"

namespace qvl::graph {

// An observer writing .npy files into dir (created if missing). Write errors are logged once.
Observer make_trace_observer(const std::string& dir);

}  // namespace qvl::graph
