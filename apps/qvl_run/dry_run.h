// qvl-run --dry-run: with the same arguments as a real run, what it would cost, without running
// the model: each image's size, resized size and tokens; the prompt's tokens; the memory the run
// would touch (memory_mb: weights, kv, activations, total); and estimate_ms from the FLOP/byte
// model and a short probe of this machine (qvl::estimate_run). Useful to size
// --image-max-tokens and -c before a long job; a run that would not fit says so.
#pragma once

#include <qvl/qvl.h>

#include "args.h"

namespace qvl::app {

// Prints the report (one JSON object with --json) and returns the exit code: 0 when the run
// fits, 5 (resource) when it would not (the report says why).
int run_dry(const RunOptions& o, const SessionOptions& so, const Model& model,
            const Prompt& prompt);

}  // namespace qvl::app
