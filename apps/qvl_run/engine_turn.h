// One request through the Engine from qvl-run's own thread (one-shot run and chat mode): submit,
// then wait for the answer while watching the Ctrl-C flag (runtime::run_request). The answer
// streams from the Engine's scheduler thread through the request's on_text.
#pragma once

#include <atomic>

#include "base/status.h"
#include "runtime/engine.h"
#include "runtime/generate.h"

namespace qvl::app {

// Submits `request` (its on_done is replaced) and waits for it to finish. When *interrupted
// becomes true the request is cancelled: the answer so far is kept, finish_reason "cancelled".
// A request that fails returns its error.
base::Result<runtime::RequestResult> run_turn(runtime::Engine& engine, runtime::Request request,
                                              const std::atomic<bool>* interrupted);

// The result in the shape of the --json report and the timing block ("cancelled" reads
// "interrupted", as the run loop of generate() names it).
runtime::GenerateResult generate_result(const runtime::RequestResult& r);

}  // namespace qvl::app
