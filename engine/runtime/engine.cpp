#include "runtime/engine.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "base/task_trace.h"
#include "base/timer.h"
#include "runtime/engine_impl.h"
#include "runtime/image_cache.h"
#include "runtime/sampler.h"
#include "text/tokenizer.h"

namespace qvl::runtime {

using base::ErrorCode;
using engine_detail::Job;

namespace {

// Bytes at the end of text that could begin one of the stop strings (held back from streaming).
std::size_t stop_prefix_hold(std::string_view text, const std::vector<std::string>& stops) {
    std::size_t hold = 0;
    for (const std::string& s : stops) {
        for (std::size_t k = std::min(s.size() - 1, text.size()); k > hold; --k) {
            if (text.substr(text.size() - k) == std::string_view(s).substr(0, k)) {
                hold = k;
                break;
            }
        }
    }
    return hold;
}

int merge_size(const model::Model& m) { return m.config().vision.spatial_merge_size; }

}  // namespace

void Engine::Impl::run() {
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mu);
            cv.wait(lock, [&] {
                return stop || forget || !queue.empty() || busy > 0 || !cancels.empty();
            });
            if (stop) break;
            if (forget) {
                forget = false;
                for (int s = 0; s < int(slots.size()); ++s) {
                    if (slots[s] != nullptr) continue;
                    session->reset_slot(s);
                    slot_images[std::size_t(s)] = {};
                }
            }
            cancels_now.swap(cancels);
            cancels.clear();
            // Cancelled while queued: out of the queue now, finished below without the lock.
            for (auto it = queue.begin(); it != queue.end();) {
                if (std::find(cancels_now.begin(), cancels_now.end(), (*it)->id) !=
                    cancels_now.end()) {
                    dropped.push_back(std::move(*it));
                    it = queue.erase(it);
                } else {
                    ++it;
                }
            }
            // Admit one request at a time: its vision and prefill run in pieces between steps.
            if (admitting < 0 && !queue.empty()) {
                const int s = pick_slot(*queue.front());
                if (s >= 0) {
                    slots[s] = std::move(queue.front());
                    queue.pop_front();
                    admitting = s;
                    ++busy;
                }
            }
            more_waiting =
                !queue.empty() && std::find(slots.begin(), slots.end(), nullptr) != slots.end();
        }
        for (std::unique_ptr<Job>& j : dropped) finish_job(*j, "cancelled", {});
        dropped.clear();
        for (int s = 0; s < int(slots.size()); ++s) {
            if (slots[s] != nullptr && std::find(cancels_now.begin(), cancels_now.end(),
                                                 slots[s]->id) != cancels_now.end()) {
                finish(s, "cancelled");
            }
        }
        cancels_now.clear();
        step();
    }
    // Shutting down: everything still queued or running ends "cancelled".
    for (int s = 0; s < int(slots.size()); ++s) {
        if (slots[s] != nullptr) finish(s, "cancelled");
    }
    std::deque<std::unique_ptr<Job>> rest;
    {
        const std::lock_guard<std::mutex> lock(mu);
        rest.swap(queue);
    }
    for (std::unique_ptr<Job>& j : rest) finish_job(*j, "cancelled", {});
}

// How many of j's prompt tokens the slot's KV already holds: the common prefix of token ids,
// cut before the first image or video frame whose content differs and never inside a run of
// image or video pads, and at least one token short of the prompt (its last position's logits
// are needed).
int Engine::Impl::reusable_prefix(int slot, const Job& j, std::size_t* kept_images) const {
    const std::span<const std::int32_t> held = session->slot_tokens(slot);
    const std::vector<std::int32_t>& ids = j.req.prompt.ids;
    const std::int32_t image_pad = model->config().image_token_id;
    const std::int32_t video_pad = model->config().video_token_id;
    // A run of video pads in a prompt without videos is text; it has no image to match and
    // stops the reuse, which is safe.
    const auto is_pad = [&](std::int32_t id) { return id == image_pad || id == video_pad; };
    const SlotImages& mem = slot_images[std::size_t(slot)];
    const std::size_t limit = std::min(held.size(), ids.size() - 1);
    std::size_t keep = 0, image = 0;
    while (keep < limit && held[keep] == ids[keep]) {
        if (is_pad(ids[keep]) && (keep == 0 || ids[keep - 1] != ids[keep])) {  // a run starts
            const bool same = image < mem.hashes.size() && image < j.image_hashes.size() &&
                              mem.hashes[image] == j.image_hashes[image] &&
                              mem.grids[image].t == j.grids[image].t &&
                              mem.grids[image].h == j.grids[image].h &&
                              mem.grids[image].w == j.grids[image].w;
            if (!same) break;
            ++image;
        }
        ++keep;
    }
    while (keep > 0 && is_pad(ids[keep]) && ids[keep - 1] == ids[keep]) --keep;  // not in a run
    std::size_t images = 0;
    for (std::size_t i = 0; i < keep; ++i)
        images += is_pad(ids[i]) && (i == 0 || ids[i - 1] != ids[i]);
    *kept_images = images;
    return int(keep);
}

// The free slot for j: the one whose conversation j continues (it reuses at least half of what
// the slot holds) with the longest reuse; otherwise the slot with the least to lose, so that an
// incidental common prefix (the same system prompt) does not evict another conversation. -1
// when no slot is free.
int Engine::Impl::pick_slot(Job& j) const {
    int best = -1, best_score = -1, best_keep = 0;
    std::size_t best_held = 0, best_images = 0;
    for (int s = 0; s < int(slots.size()); ++s) {
        if (slots[s] != nullptr) continue;
        std::size_t images = 0;
        const int keep = reusable_prefix(s, j, &images);
        const std::size_t held = session->slot_tokens(s).size();
        const int score = keep > 0 && 2 * std::size_t(keep) >= held ? keep : 0;
        if (score > best_score || (score == best_score && held < best_held)) {
            best = s;
            best_score = score;
            best_keep = keep;
            best_held = held;
            best_images = images;
        }
    }
    if (best >= 0) {
        j.keep = best_keep;
        j.next_image = best_images;
        j.kept_images = best_images;
        j.result.cached_prompt_tokens = best_keep;
    }
    return best;
}

// Samples the slot's next token from its logits, streams it, and either ends the request or
// leaves the token for the next decode step.
void Engine::Impl::take_token(int slot) {
    Job& j = *slots[slot];
    const GenerateParams& gp = j.req.params;
    if (gp.cancel != nullptr && gp.cancel->load(std::memory_order_relaxed)) {
        finish(slot, "cancelled");
        return;
    }
    const std::int32_t token = session->sample(slot, *j.sampler);
    if (j.result.tokens.empty() && j.first_token_ms == 0) {
        j.first_token_ms = base::now_ms();
        j.result.timings.ttft = j.first_token_ms - j.submitted_ms;
        if (base::TaskTrace* trace = base::TaskTrace::active()) {
            trace->mark("first_token", long(j.id), j.first_token_ms);
        }
    }
    const std::vector<std::int32_t>& stops = gp.stop_ids.empty() ? default_stops : gp.stop_ids;
    // ignore_eos does not outlast a grammar: once the grammar has ended, its end token is the
    // only choice left, and continuing would repeat it until the length limit.
    const grammar::Matcher* constraint = j.sampler->constraint();
    const bool grammar_ends = constraint != nullptr && constraint->is_end(token);
    if ((!gp.ignore_eos || grammar_ends) &&
        std::find(stops.begin(), stops.end(), token) != stops.end()) {
        finish(slot, "stop");
        return;
    }
    j.result.tokens.push_back(token);
    if (gp.top_logprobs >= 0) {
        j.result.logprobs.push_back(token_logprobs(session->logits(slot), token, gp.top_logprobs));
        if (j.req.on_logprobs) j.req.on_logprobs(j.result.logprobs.back());
    }
    j.sampler->accept(token);
    j.result.text.append(j.stream->push(token));
    if (emit_text(j, token)) {
        j.stop_string = true;
        finish(slot, "stop");
        return;
    }
    if (fault_after_tokens >= 0 && int(j.result.tokens.size()) >= fault_after_tokens) {
        finish(slot, "error",
               base::error(ErrorCode::kInternal, "injected fault after {} tokens ({})",
                           fault_after_tokens, "QVL_FAULT_AFTER_TOKENS, a test hook"));
        return;
    }
    if (int(j.result.tokens.size()) >= gp.n_predict ||
        session->context_used(slot) + 1 > session->context_size()) {
        finish(slot, "length");
        return;
    }
    j.pending = token;
}

// Streams what is safe to stream; true when a stop string matched (the text is cut before it).
bool Engine::Impl::emit_text(Job& j, std::int32_t token) {
    std::string& text = j.result.text;
    const std::vector<std::string>& stops = j.req.stop_strings;
    std::size_t end = text.size();
    bool matched = false;
    if (!stops.empty()) {
        std::size_t longest = 0;
        for (const std::string& s : stops) longest = std::max(longest, s.size());
        const std::size_t from = j.streamed > longest ? j.streamed - longest : 0;
        std::size_t at = std::string::npos;
        for (const std::string& s : stops) {
            if (!s.empty()) at = std::min(at, text.find(s, from));
        }
        if (at != std::string::npos) {
            text.resize(at);
            end = std::max(at, j.streamed);
            matched = true;
        } else {
            end = text.size() - stop_prefix_hold(text, stops);
        }
    }
    if (end > j.streamed) {
        if (j.req.on_text) {
            j.req.on_text(std::string_view(text).substr(j.streamed, end - j.streamed), token);
        }
        j.streamed = end;
    }
    return matched;
}

void Engine::Impl::finish(int slot, const char* reason, base::Status error) {
    if (admitting == slot) {
        admitting = -1;
        if (slots[slot]->req.on_vision_node) session->set_vision_observer({});
        session->clear_images();
        session->reset_slot(slot);
        slot_images[std::size_t(slot)] = {};
    }
    const std::unique_ptr<Job> job = std::move(slots[slot]);
    {
        const std::lock_guard<std::mutex> lock(mu);
        --busy;
    }
    finish_job(*job, reason, std::move(error));
}

void Engine::Impl::finish_job(Job& j, const char* reason, base::Status error) {
    const double now = base::now_ms();
    RequestResult& r = j.result;
    if (j.stream != nullptr && !j.stop_string) {
        r.text.append(j.stream->finish());
        const std::int32_t last = r.tokens.empty() ? -1 : r.tokens.back();
        if (r.text.size() > j.streamed && j.req.on_text) {
            j.req.on_text(std::string_view(r.text).substr(j.streamed), last);
        }
        j.streamed = r.text.size();
    }
    r.finish_reason = reason;
    r.error = std::move(error);
    if (r.timings.queue == 0 && !j.prefill_started) r.timings.queue = now - j.submitted_ms;
    if (j.first_token_ms > 0) r.timings.decode = now - j.first_token_ms;
    r.timings.total = now - j.submitted_ms;
    count_finished(j);
    if (j.req.on_done) j.req.on_done(r);
}

void Engine::Impl::count_finished(const Job& j) {
    const RequestResult& r = j.result;
    const std::lock_guard<std::mutex> lock(mu);
    Stats& c = counters;
    const std::string_view reason = r.finish_reason;
    ++(reason == "stop"        ? c.stopped
       : reason == "length"    ? c.length
       : reason == "cancelled" ? c.cancelled
                               : c.failed);
    if (j.fork_of == 0) c.prompt_tokens += std::uint64_t(r.prompt_tokens);
    c.cached_prompt_tokens += std::uint64_t(r.cached_prompt_tokens);
    c.generated_tokens += r.tokens.size();
    c.image_cache_hits += std::uint64_t(r.image_cache_hits);
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

base::Result<std::unique_ptr<Engine>> Engine::create(const model::Model& model,
                                                     const EngineOptions& options) {
    SessionOptions so;
    so.threads = options.threads;
    so.ctx_size = options.ctx_size;
    so.max_image_tokens = options.max_image_tokens;
    so.precision = options.precision;
    so.profile = options.profile;
    return create(model, options, so);
}

base::Result<std::unique_ptr<Engine>> Engine::create(const model::Model& model,
                                                     const EngineOptions& options,
                                                     const SessionOptions& session) {
    if (options.max_queue < 0) {
        return base::error(ErrorCode::kInvalidArgument, "queue length {} must not be negative",
                           options.max_queue);
    }
    auto impl = std::make_unique<Impl>();
    impl->model = &model;
    impl->options = options;
    impl->options.threads = session.threads;
    impl->options.ctx_size = session.ctx_size;
    impl->options.max_image_tokens = session.max_image_tokens;
    impl->options.precision = session.precision;
    impl->options.profile = session.profile;
    SessionOptions so = session;
    so.slots = options.slots;
    QVL_ASSIGN_OR_RETURN(impl->session, Session::create(model, so));
    impl->default_stops = default_stop_ids(model);
    if (const char* fault = std::getenv("QVL_FAULT_AFTER_TOKENS"); fault != nullptr) {
        impl->fault_after_tokens = std::max(0, std::atoi(fault));
    }
    impl->slots.resize(std::size_t(options.slots));
    impl->slot_images.resize(std::size_t(options.slots));
    if (options.image_cache_mb > 0) {
        impl->image_cache = std::make_unique<ImageFeatureCache>(options.image_cache_mb << 20);
    }
    impl->batch_slots.reserve(std::size_t(options.slots));
    impl->batch_tokens.reserve(std::size_t(options.slots));
    std::unique_ptr<Engine> engine(new Engine(std::move(impl)));
    Impl* p = engine->impl_.get();
    try {
        p->thread = std::thread([p] { p->run(); });
    } catch (const std::exception& e) {
        return base::error(ErrorCode::kResourceExhausted, "starting the scheduler: {}", e.what());
    }
    return engine;
}

Engine::~Engine() {
    {
        const std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->stop = true;
    }
    impl_->cv.notify_all();
    if (impl_->thread.joinable()) impl_->thread.join();
}

base::Result<std::unique_ptr<Job>> Engine::Impl::make_job(Request request) const {
    const int n = int(request.prompt.ids.size());
    if (n == 0) return base::error(ErrorCode::kInvalidArgument, "the prompt is empty");
    if (request.penalty_from > std::size_t(n)) {
        return base::error(ErrorCode::kInvalidArgument,
                           "penalty_from {} is past the prompt's {} tokens", request.penalty_from,
                           n);
    }
    if (n >= session->context_size()) {
        return base::error(ErrorCode::kOutOfRange,
                           "prompt of {} tokens does not fit a slot's context of {} tokens", n,
                           session->context_size());
    }
    auto job = std::make_unique<Job>();
    job->req = std::move(request);
    job->submitted_ms = base::now_ms();
    job->result.prompt_tokens = n;
    job->result.timings.image_decode = job->req.prompt.image_decode_ms;
    const int merge = merge_size(*model);
    for (const image::PreprocessedImage& im : job->req.prompt.images) {
        job->image_hashes.push_back(image_key(im));
        job->grids.push_back({.t = im.grid_t, .h = im.grid_h / merge, .w = im.grid_w / merge});
    }
    job->sampler =
        std::make_unique<Sampler>(model->config().text.vocab_size, job->req.params.sampling);
    if (job->req.params.grammar) {
        const std::vector<std::int32_t>& stops =
            job->req.params.stop_ids.empty() ? default_stops : job->req.params.stop_ids;
        std::unique_ptr<grammar::Matcher> matcher =
            session->grammar_matcher(job->req.params.grammar, stops);
        const std::string& trigger = job->req.params.grammar_trigger;
        if (trigger.empty()) {
            job->sampler->constrain(std::move(matcher));
        } else {
            const std::int32_t id = model->tokenizer().token_id(trigger);
            if (id < 0) {
                return base::error(ErrorCode::kInvalidArgument,
                                   "the grammar's trigger '{}' is not a token of this model",
                                   trigger);
            }
            job->sampler->constrain_after(id, std::move(matcher));
        }
    }
    job->stream = std::make_unique<text::StreamDecoder>(model->tokenizer(), true);
    job->result.tokens.reserve(
        std::size_t(std::clamp(job->req.params.n_predict, 0, session->context_size())));
    return job;
}

base::Result<RequestId> Engine::submit(Request request) {
    std::vector<Request> one;
    one.push_back(std::move(request));
    QVL_ASSIGN_OR_RETURN(std::vector<RequestId> ids, submit_group(std::move(one)));
    return ids[0];
}

base::Result<std::vector<RequestId>> Engine::submit_group(std::vector<Request> requests) {
    const std::size_t n = requests.size();
    base::Result<std::vector<RequestId>> ids = impl_->queue_group(std::move(requests));
    if (ids.ok()) {
        impl_->cv.notify_all();
    } else {
        const std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->counters.refused += n;
    }
    return ids;
}

base::Result<std::vector<RequestId>> Engine::Impl::queue_group(std::vector<Request> requests) {
    std::vector<std::unique_ptr<Job>> jobs;
    for (Request& r : requests) {
        QVL_ASSIGN_OR_RETURN(std::unique_ptr<Job> job, make_job(std::move(r)));
        if (!jobs.empty() && (job->req.prompt.ids != jobs[0]->req.prompt.ids ||
                              job->image_hashes != jobs[0]->image_hashes)) {
            return base::error(ErrorCode::kInvalidArgument,
                               "request {} of a group has another prompt than the first",
                               jobs.size());
        }
        jobs.push_back(std::move(job));
    }
    std::vector<RequestId> ids;
    const std::lock_guard<std::mutex> lock(mu);
    if (stop) return base::error(ErrorCode::kResourceExhausted, "the engine is shutting down");
    if (int(queue.size() + jobs.size()) > options.max_queue) {
        return base::error(ErrorCode::kResourceExhausted,
                           "{} requests are already waiting for a slot", queue.size());
    }
    for (std::unique_ptr<Job>& job : jobs) {
        job->id = next_id++;
        job->fork_of = ids.empty() ? 0 : ids[0];
        ids.push_back(job->id);
        if (base::TaskTrace* trace = base::TaskTrace::active()) {
            trace->mark("submit", long(job->id), job->submitted_ms);
        }
        queue.push_back(std::move(job));
    }
    counters.submitted += ids.size();
    return ids;
}

void Engine::cancel(RequestId id) {
    {
        const std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->cancels.push_back(id);
    }
    impl_->cv.notify_all();
}

void Engine::forget_prefixes() {
    {
        const std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->forget = true;
    }
    impl_->cv.notify_all();
}

const graph::Profile& Engine::profile() const { return impl_->session->profile(); }

Engine::Stats Engine::stats() const {
    const std::lock_guard<std::mutex> lock(impl_->mu);
    Stats s = impl_->counters;
    s.slots_busy = impl_->busy;
    s.queue_length = int(impl_->queue.size());
    return s;
}

const model::Model& Engine::model() const { return *impl_->model; }
int Engine::slots() const { return impl_->session->slots(); }
int Engine::ctx_size() const { return impl_->session->context_size(); }
Precision Engine::precision() const { return impl_->session->precision(); }
int Engine::threads() const { return impl_->session->threads(); }
kernels::Isa Engine::isa() const { return impl_->session->isa(); }

}  // namespace qvl::runtime
