#include "engine_turn.h"

#include <utility>

#include "runtime/run_request.h"

namespace qvl::app {

base::Result<runtime::RequestResult> run_turn(runtime::Engine& engine, runtime::Request request,
                                              const std::atomic<bool>* interrupted) {
    return runtime::run_request(engine, std::move(request), interrupted);
}

runtime::GenerateResult generate_result(const runtime::RequestResult& r) {
    runtime::GenerateResult g;
    g.tokens = r.tokens;
    g.text = r.text;
    g.finish_reason = r.finish_reason == "cancelled" ? "interrupted" : r.finish_reason;
    g.vision_ms = r.timings.vision;
    g.prefill_ms = r.timings.prefill;
    g.decode_ms = r.timings.decode;
    g.ttft_ms = r.timings.ttft;
    g.decoded_steps = r.decode_steps;
    g.logprobs = r.logprobs;
    return g;
}

}  // namespace qvl::app
