// qvl-run --batch FILE.jsonl: many conversations through the multi-sequence runtime
// (qvl::Engine), --parallel N of them decoded at once. Each input line is one request
// {"id", "messages" (the --messages format), optional "n_predict", "temperature", "top_k",
// "top_p", "seed", "ignore_eos"}; each output line one result {"id", "text", "tokens",
// "finish_reason", "prompt_tokens", "timings_ms": {"queue", "vision", "prefill", "ttft",
// "decode", "total"}} or {"id", "line", "error"}, written as requests finish. Progress goes to
// stderr.
#pragma once

#include <qvl/qvl.h>

#include "args.h"
#include "env.h"

namespace qvl::app {

// Runs the batch; the exit code: 0 when every line succeeded, 4 when some lines got an error
// result (the others still ran), 3/4/5 when the batch could not start at all.
int run_batch(const RunOptions& options, const EnvOptions& env);

}  // namespace qvl::app
