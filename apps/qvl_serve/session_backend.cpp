#include "session_backend.h"

#include <algorithm>

#include "stop_matcher.h"

namespace qvl::serve {

base::Result<std::unique_ptr<SessionBackend>> SessionBackend::create(
    const model::Model& model, const runtime::SessionOptions& options, int max_queue) {
    QVL_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> session,
                         runtime::Session::create(model, options));
    return std::unique_ptr<SessionBackend>(new SessionBackend(std::move(session), max_queue));
}

SessionBackend::SessionBackend(std::unique_ptr<runtime::Session> session, int max_queue)
    : session_(std::move(session)), max_queue_(max_queue) {
    thread_ = std::thread([this] { worker(); });
}

SessionBackend::~SessionBackend() {
    std::deque<Job> dropped;
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        dropped.swap(queue_);
        cancel_running_.store(true);
    }
    cv_.notify_all();
    thread_.join();
    for (Job& job : dropped) {
        if (job.request.on_done) job.request.on_done({.finish_reason = "cancelled"});
    }
}

base::Result<RequestId> SessionBackend::submit(BackendRequest request) {
    const std::int64_t need =
        std::int64_t(request.prompt.ids.size()) + std::int64_t(request.params.n_predict);
    if (request.prompt.ids.empty()) {
        return base::error(base::ErrorCode::kInvalidArgument, "the prompt is empty");
    }
    if (need > session_->context_size()) {
        return base::error(base::ErrorCode::kOutOfRange,
                           "the prompt of {} tokens plus {} new tokens does not fit the context "
                           "of {} tokens per slot",
                           request.prompt.ids.size(), request.params.n_predict,
                           session_->context_size());
    }
    std::lock_guard lock(mu_);
    // max_queue counts requests that wait: one more may come in while the slot is free.
    const int occupied = int(queue_.size()) + (running_id_ != 0 ? 1 : 0);
    if (stopping_ || occupied >= max_queue_ + 1) {
        return base::error(base::ErrorCode::kResourceExhausted,
                           "the server is busy: {} requests are waiting (--max-queue {})",
                           queue_.size(), max_queue_);
    }
    const RequestId id = next_id_++;
    queue_.push_back(Job{.id = id, .request = std::move(request), .queued = base::Timer()});
    cv_.notify_one();
    return id;
}

void SessionBackend::cancel(RequestId id) {
    Job dropped;
    {
        std::lock_guard lock(mu_);
        if (running_id_ == id) {
            cancel_running_.store(true);
            return;
        }
        auto it =
            std::find_if(queue_.begin(), queue_.end(), [&](const Job& j) { return j.id == id; });
        if (it == queue_.end()) return;
        dropped = std::move(*it);
        queue_.erase(it);
    }
    if (dropped.request.on_done) dropped.request.on_done({.finish_reason = "cancelled"});
}

Backend::Stats SessionBackend::stats() const {
    std::lock_guard lock(mu_);
    return {.slots = 1, .slots_busy = running_id_ != 0 ? 1 : 0, .queue_length = int(queue_.size())};
}

void SessionBackend::worker() {
    for (;;) {
        Job job;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_) return;
            job = std::move(queue_.front());
            queue_.pop_front();
            running_id_ = job.id;
            cancel_running_.store(false);
        }
        run(job);
        std::lock_guard lock(mu_);
        running_id_ = 0;
    }
}

void SessionBackend::run(Job& job) {
    BackendRequest& req = job.request;
    BackendResult out;
    out.prompt_tokens = int(req.prompt.ids.size());
    out.timings.queue = job.queued.elapsed_ms();
    out.timings.image_decode = req.prompt.image_decode_ms + req.prompt.preprocess_ms;
    const base::Timer run_time;

    StopMatcher matcher(req.stop_strings);
    runtime::GenerateParams params = req.params;
    params.cancel = &cancel_running_;
    runtime::GenerateHooks hooks;
    bool stopped_by_string = false;
    hooks.on_text = [&](std::string_view piece) {
        const std::string safe = matcher.push(piece);
        out.text += safe;
        if (!safe.empty() && req.on_text) req.on_text(safe, -1);
        if (matcher.matched() && !stopped_by_string) {
            stopped_by_string = true;
            cancel_running_.store(true);
        }
    };
    session_->reset();
    base::Result<runtime::GenerateResult> r =
        runtime::generate(*session_, req.prompt, params, hooks);
    if (!r.ok()) {
        out.finish_reason = "error";
        out.error = r.status();
    } else {
        const runtime::GenerateResult& g = r.value();
        out.tokens = g.tokens;
        if (stopped_by_string) {
            out.finish_reason = "stop";
        } else {
            const std::string tail = matcher.finish();
            out.text += tail;
            if (!tail.empty() && req.on_text) req.on_text(tail, -1);
            out.finish_reason = g.finish_reason == "interrupted" ? "cancelled" : g.finish_reason;
        }
        out.timings.vision = g.vision_ms;
        out.timings.prefill = g.prefill_ms;
        out.timings.ttft = out.timings.queue + g.ttft_ms;
        out.timings.decode = g.decode_ms;
    }
    out.timings.total = out.timings.queue + run_time.elapsed_ms();
    if (req.on_done) req.on_done(out);
}

}  // namespace qvl::serve
