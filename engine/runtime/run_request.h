// One request through the Engine from a thread that wants its answer before going on (qvl-run's
// one-shot run and chat mode, the public API's Session::generate): submit, then wait for the
// result while watching a stop flag. The answer streams from the Engine's scheduler thread
// through the request's on_text.
#pragma once

#include <atomic>

#include "base/status.h"
#include "runtime/engine.h"

namespace qvl::runtime {

// Submits `request` (its on_done is replaced) and blocks until it finishes. When *interrupted
// (may be null) becomes true, the request is cancelled through Engine::cancel within a few tens
// of milliseconds, even mid-prefill: the answer so far is kept, finish_reason "cancelled". A
// request that is refused or fails returns its error.
base::Result<RequestResult> run_request(Engine& engine, Request request,
                                        const std::atomic<bool>* interrupted);

}  // namespace qvl::runtime
