#include "engine_backend.h"

namespace qvl::serve {

base::Result<std::unique_ptr<EngineBackend>> EngineBackend::create(const model::Model& model,
                                                                   runtime::EngineOptions options,
                                                                   int max_queue) {
    options.max_queue = max_queue + options.slots;
    QVL_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Engine> engine,
                         runtime::Engine::create(model, options));
    return std::unique_ptr<EngineBackend>(
        new EngineBackend(std::move(engine), options.slots, options.ctx_size, max_queue));
}

namespace {

runtime::Request to_engine(BackendRequest request) {
    runtime::Request r;
    r.prompt = std::move(request.prompt);
    r.params = std::move(request.params);
    r.params.cancel = nullptr;  // the Engine cancels through cancel()
    r.stop_strings = std::move(request.stop_strings);
    r.on_text = std::move(request.on_text);
    r.on_logprobs = std::move(request.on_logprobs);
    r.on_done = [done = std::move(request.on_done)](const runtime::RequestResult& e) {
        if (!done) return;
        BackendResult b;
        b.tokens = e.tokens;
        b.text = e.text;
        b.finish_reason = e.finish_reason;
        b.error = e.error;
        b.prompt_tokens = e.prompt_tokens;
        b.cached_prompt_tokens = e.cached_prompt_tokens;
        b.image_cache_hits = e.image_cache_hits;
        b.logprobs = e.logprobs;
        b.timings = {.queue = e.timings.queue,
                     .image_decode = e.timings.image_decode,
                     .vision = e.timings.vision,
                     .prefill = e.timings.prefill,
                     .ttft = e.timings.ttft,
                     .decode = e.timings.decode,
                     .total = e.timings.total};
        done(b);
    };
    return r;
}

}  // namespace

base::Result<RequestId> EngineBackend::submit(BackendRequest request) {
    std::vector<BackendRequest> one;
    one.push_back(std::move(request));
    QVL_ASSIGN_OR_RETURN(std::vector<RequestId> ids, submit_group(std::move(one)));
    return ids[0];
}

base::Result<std::vector<RequestId>> EngineBackend::submit_group(
    std::vector<BackendRequest> requests) {
    const runtime::Engine::Stats s = engine_->stats();
    if (s.slots_busy + s.queue_length + int(requests.size()) > slots_ + max_queue_) {
        return base::error(base::ErrorCode::kResourceExhausted,
                           "the server is busy: {} requests are waiting (--max-queue {})",
                           s.queue_length, max_queue_);
    }
    std::vector<runtime::Request> group;
    group.reserve(requests.size());
    for (BackendRequest& r : requests) group.push_back(to_engine(std::move(r)));
    return engine_->submit_group(std::move(group));
}

Backend::Stats EngineBackend::stats() const {
    const runtime::Engine::Stats s = engine_->stats();
    return {.slots = slots_, .slots_busy = s.slots_busy, .queue_length = s.queue_length};
}

}  // namespace qvl::serve
