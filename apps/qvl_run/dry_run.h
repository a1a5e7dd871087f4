// qvl-run --dry-run: with the same arguments as a real run, what it would cost, without running
// the model: each image's size, resized size and tokens; the prompt's tokens; the memory the run
// would touch (memory_mb: weights, kv, activations, total); and estimate_ms from the FLOP/byte
// model and a short probe of this machine (runtime/cost_model.h). Useful to size
// --image-max-tokens and -c before a long job; a run that would not fit says so.
#pragma once

#include "args.h"
#include "model/model.h"
#include "runtime/generate.h"
#include "runtime/session.h"

namespace qvl::app {

// Prints the report (one JSON object with --json) and returns the exit code: 0 when the run
// fits, 5 (resource) when it would not (the report says why).
int run_dry(const RunOptions& o, const runtime::SessionOptions& so, const model::Model& model,
            const runtime::PreparedPrompt& prompt);

}  // namespace qvl::app
