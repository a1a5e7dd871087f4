#include "runtime/run_request.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>

namespace qvl::runtime {
namespace {

// Shared with the scheduler thread's on_done: shared ownership keeps it valid whichever side
// lets go last.
struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    RequestResult result;
};

// How often the waiting thread looks at the stop flag: short enough to feel immediate.
constexpr std::chrono::milliseconds kPoll{20};

}  // namespace

base::Result<RequestResult> run_request(Engine& engine, Request request,
                                        const std::atomic<bool>* interrupted) {
    auto outcome = std::make_shared<Outcome>();
    request.on_done = [outcome](const RequestResult& r) {
        {
            const std::lock_guard<std::mutex> lock(outcome->mu);
            outcome->result = r;
            outcome->done = true;
        }
        outcome->cv.notify_all();
    };
    QVL_ASSIGN_OR_RETURN(const RequestId id, engine.submit(std::move(request)));
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

}  // namespace qvl::runtime
