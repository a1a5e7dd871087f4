#include "engine_turn.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>

namespace qvl::app {
namespace {

// Shared with the scheduler thread's on_done (which may outlive a failed wait only briefly:
// shared ownership keeps it valid).
struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    runtime::RequestResult result;
};

// How often the waiting thread looks at the Ctrl-C flag: short enough to feel immediate.
constexpr std::chrono::milliseconds kPoll{20};

}  // namespace

base::Result<runtime::RequestResult> run_turn(runtime::Engine& engine, runtime::Request request,
                                              const std::atomic<bool>* interrupted) {
    auto outcome = std::make_shared<Outcome>();
    request.on_done = [outcome](const runtime::RequestResult& r) {
        {
            const std::lock_guard<std::mutex> lock(outcome->mu);
            outcome->result = r;
            outcome->done = true;
        }
        outcome->cv.notify_all();
    };
    QVL_ASSIGN_OR_RETURN(const runtime::RequestId id, engine.submit(std::move(request)));
    bool cancelled = false;
    std::unique_lock<std::mutex> lock(outcome->mu);
    while (!outcome->done) {
        outcome->cv.wait_for(lock, kPoll, [&] { return outcome->done; });
        if (!outcome->done && !cancelled && interrupted != nullptr && interrupted->load()) {
            engine.cancel(id);
            cancelled = true;
        }
    }
    if (outcome->result.finish_reason == "error") return outcome->result.error;
    return std::move(outcome->result);
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
    return g;
}

}  // namespace qvl::app
