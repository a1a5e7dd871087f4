// What the HTTP layer needs from whatever runs the model: submit a prepared request with
// streaming callbacks, cancel it, read the load. The types mirror the multi-sequence
// runtime::Engine (engine/runtime/engine.h: Request, RequestResult, submit/cancel/stats) member
// for member, so the Engine plugs in through a thin adapter and the server code does not change.
// Until then SessionBackend serves requests one at a time over a runtime::Session.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "runtime/generate.h"

namespace qvl::serve {

struct BackendTimings {  // milliseconds
    double queue = 0, image_decode = 0, vision = 0, prefill = 0, ttft = 0, decode = 0, total = 0;
};

struct BackendResult {
    std::vector<std::int32_t> tokens;
    std::string text;
    std::string finish_reason;  // "stop" | "length" | "cancelled" | "error"
    base::Status error;         // set when finish_reason == "error"
    int prompt_tokens = 0;
    int cached_prompt_tokens = 0;
    int image_cache_hits = 0;
    BackendTimings timings;
    std::vector<runtime::TokenLogprobs> logprobs;  // when params.top_logprobs >= 0
};

struct BackendRequest {
    runtime::PreparedPrompt prompt;
    runtime::GenerateParams params;
    std::vector<std::string> stop_strings;  // generation ends before the first match
    // Called on the backend's thread: quick, and never calling back into the backend except
    // cancel(). on_text pieces are whole UTF-8 characters; on_done runs exactly once, last.
    std::function<void(std::string_view piece, std::int32_t token)> on_text;
    std::function<void(const BackendResult&)> on_done;
    // params.top_logprobs >= 0: each token's log-probabilities as soon as it is kept (its text
    // may come later, held back by UTF-8 or a stop string).
    std::function<void(const runtime::TokenLogprobs&)> on_logprobs;
};

using RequestId = std::uint64_t;

class Backend {
  public:
    struct Stats {
        int slots = 1;
        int slots_busy = 0;
        int queue_length = 0;
    };
    virtual ~Backend() = default;
    // Thread-safe. kResourceExhausted when the queue is full; kOutOfRange when the prompt plus
    // its new tokens cannot fit a slot's context.
    virtual base::Result<RequestId> submit(BackendRequest request) = 0;
    // The n choices of one prompt (OpenAI's n): as submit, all or none; the others start from
    // a copy of the first one's prefill when slots are free (runtime::Engine::submit_group).
    virtual base::Result<std::vector<RequestId>> submit_group(
        std::vector<BackendRequest> requests) = 0;
    // Thread-safe, idempotent; unknown or finished ids are ignored. The request ends with
    // "cancelled" within one step and its slot frees.
    virtual void cancel(RequestId id) = 0;
    virtual Stats stats() const = 0;
    virtual int ctx_size() const = 0;  // KV tokens per slot
    virtual const model::Model& model() const = 0;
};

}  // namespace qvl::serve
