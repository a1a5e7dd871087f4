// qvl::Engine of the public header: a runtime::Engine (engine/runtime/engine.h) with the
// public request and result types. The Session is the same core with one slot.
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <vector>

#include "api/convert.h"
#include "api/internals.h"

namespace qvl {
namespace api {
namespace {

// Shared with the scheduler thread's on_done: shared ownership keeps it valid whichever side
// lets go last.
struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    runtime::RequestResult result;
};

// How often a waiting thread looks at its interrupt flag: short enough to feel immediate.
constexpr std::chrono::milliseconds kPoll{20};

// The runtime's views, offered to tools as spans and counts.
void add_tool_hooks(const Request& in, const model::Model& m, runtime::Request* out) {
    if (in.on_vision_progress) {
        const int total = m.config().vision.depth * int(out->prompt.images.size());
        out->on_vision_node = [hook = in.on_vision_progress, total, done = 0](
                                  const std::string& name, const float*, int, int,
                                  std::ptrdiff_t) mutable {
            if (name.starts_with("vision.blocks.") && name.ends_with(".out")) hook(++done, total);
        };
    }
    if (in.on_image_features) {
        // The first visual input's features: an image's, or every temporal patch of a video in
        // order (the session holds a video as one image per frame pair), which is HF's
        // get_video_features concatenated and the order of the <|video_pad|> tokens.
        const int hidden = m.config().text.hidden_size;
        const std::size_t want =
            in.prompt.images().empty() ? 0 : std::size_t(in.prompt.images()[0].tokens) * hidden;
        out->after_vision = [hook = in.on_image_features, hidden, want](const runtime::Session& s) {
            std::vector<float> f;
            for (int i = 0; f.size() < want; ++i) {
                const std::span<const float> part = s.image_features(i);
                if (part.empty()) break;
                f.insert(f.end(), part.begin(), part.end());
            }
            hook(f, int(f.size()) / hidden, hidden);
        };
    }
    if (in.on_prompt_logits) {
        out->after_prefill = [hook = in.on_prompt_logits](const runtime::Session& s, int slot) {
            hook(s.logits(slot));
        };
    }
}

// A request refused before the runtime saw it: counted in Stats::refused.
Status refuse(Engine::Impl& engine, const base::Status& why, std::size_t requests) {
    engine.refused.fetch_add(requests, std::memory_order_relaxed);
    return from_engine(why);
}

}  // namespace

base::Result<runtime::Request> runtime_request(Request&& in, const model::Model& m) {
    runtime::Request r;
    r.prompt = std::move(in.prompt.impl().prepared);
    r.params.n_predict = in.max_tokens;
    r.params.ignore_eos = in.ignore_eos;
    QVL_ASSIGN_OR_RETURN(r.params.sampling, to_engine(in.sampling, m.config().text.vocab_size));
    r.params.top_logprobs = in.sampling.logprobs;
    r.params.cancel = in.cancel;
    if (in.constraint.impl()) {
        r.params.grammar = in.constraint.impl()->grammar;
        r.params.grammar_trigger = in.constraint.impl()->trigger;
        const std::string& banned = in.constraint.impl()->banned;
        if (const std::int32_t id = m.tokenizer().token_id(banned); !banned.empty() && id >= 0) {
            // Added last, so it overrides a logit_bias the request gave the same id.
            r.params.sampling.logit_bias.emplace_back(id, -std::numeric_limits<float>::infinity());
        }
    }
    r.stop_strings = std::move(in.stop);
    if (in.on_piece) {
        r.on_text = [hook = std::move(in.on_piece)](std::string_view text, std::int32_t token) {
            hook(Piece{.text = text, .token = token});
        };
    }
    if (in.on_done) {
        r.on_done = [hook = std::move(in.on_done),
                     sampling = in.sampling](const runtime::RequestResult& result) {
            hook(to_generation(runtime::RequestResult(result), sampling));
        };
    }
    if (in.on_logprob) {
        r.on_logprobs = [hook = std::move(in.on_logprob)](const runtime::TokenLogprobs& t) {
            hook(TokenLogprob{.token = t.token, .logprob = t.logprob, .top = t.top});
        };
    }
    add_tool_hooks(in, m, &r);
    return r;
}

base::Result<Core> Core::create(const Model& model, const EngineOptions& options) {
    QVL_ASSIGN_OR_RETURN(const runtime::SessionOptions so, to_engine(options.session));
    const model::Model& m = *model.impl()->model;
    const runtime::EngineOptions eo{.slots = options.slots,
                                    .max_queue = options.max_queue,
                                    .image_cache_mb = options.image_cache_mb,
                                    .admission_budget_ms = options.admission_budget_ms};
    Core core;
    core.model = model.impl();
    QVL_ASSIGN_OR_RETURN(core.engine, runtime::Engine::create(m, eo, so));
    core.road = PromptRoad::make(m, so, options);
    core.profile = options.session.profile;
    return core;
}

base::Result<runtime::RequestResult> Core::wait_for(runtime::Request request,
                                                    const std::atomic<bool>* interrupt) const {
    auto outcome = std::make_shared<Outcome>();
    request.on_done = [outcome](const runtime::RequestResult& r) {
        {
            const std::lock_guard<std::mutex> lock(outcome->mu);
            outcome->result = r;
            outcome->done = true;
        }
        outcome->cv.notify_all();
    };
    QVL_ASSIGN_OR_RETURN(const runtime::RequestId id, engine->submit(std::move(request)));
    bool cancelled = false;
    std::unique_lock<std::mutex> lock(outcome->mu);
    while (!outcome->done) {
        outcome->cv.wait_for(lock, kPoll, [&] { return outcome->done; });
        if (!outcome->done && !cancelled && interrupt != nullptr && interrupt->load()) {
            engine->cancel(id);
            cancelled = true;
        }
    }
    if (outcome->result.finish_reason == "error") return outcome->result.error;
    return std::move(outcome->result);
}

std::string Core::isa() const { return kernels::isa_name(engine->isa()); }
Precision Core::precision() const { return from_engine(engine->precision()); }
std::string Core::profile_report() const {
    return profile ? engine->profile().format() : std::string();
}

}  // namespace api

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;
Engine::~Engine() = default;

Result<Engine> Engine::create(const Model& model, const EngineOptions& options) {
    return api::guarded<Engine>("creating the engine", [&]() -> Result<Engine> {
        base::Result<api::Core> core = api::Core::create(model, options);
        if (!core.ok()) return api::from_engine(core.status());
        auto impl = std::make_unique<Impl>();
        impl->core = std::move(core).value();
        return Engine(std::move(impl));
    });
}

Result<Prompt> Model::prepare(const std::vector<Message>& messages, const SessionOptions& options,
                              bool keep_pixel_values) const {
    const base::Result<runtime::SessionOptions> so = api::to_engine(options);
    if (!so.ok()) return api::from_engine(so.status());
    return api::PromptRoad::make(*impl_->model, so.value(),
                                 {.keep_pixel_values = keep_pixel_values})
        .prepare(messages);
}

Result<Prompt> Model::prepare_raw(std::string_view text) const {
    return api::PromptRoad::make(*impl_->model, {}, {}).prepare_raw(text);
}

Result<Prompt> Engine::prepare(const std::vector<Message>& messages, const Tools& tools,
                               bool add_generation_prompt) const {
    return impl_->core.road.prepare(messages, tools, add_generation_prompt);
}

Result<Prompt> Engine::prepare_raw(std::string_view text) const {
    return impl_->core.road.prepare_raw(text);
}

Result<RequestId> Engine::submit(Request request) {
    return api::guarded<RequestId>("submitting", [&]() -> Result<RequestId> {
        base::Result<runtime::Request> r =
            api::runtime_request(std::move(request), *impl_->core.model->model);
        if (!r.ok()) return api::refuse(*impl_, r.status(), 1);
        base::Result<runtime::RequestId> id = impl_->core.engine->submit(std::move(r).value());
        if (!id.ok()) return api::from_engine(id.status());
        return RequestId(id.value());
    });
}

Result<std::vector<RequestId>> Engine::submit_group(std::vector<Request> requests) {
    return api::guarded<std::vector<RequestId>>(
        "submitting", [&]() -> Result<std::vector<RequestId>> {
            std::vector<runtime::Request> group;
            group.reserve(requests.size());
            for (Request& request : requests) {
                base::Result<runtime::Request> r =
                    api::runtime_request(std::move(request), *impl_->core.model->model);
                if (!r.ok()) return api::refuse(*impl_, r.status(), requests.size());
                group.push_back(std::move(r).value());
            }
            base::Result<std::vector<runtime::RequestId>> ids =
                impl_->core.engine->submit_group(std::move(group));
            if (!ids.ok()) return api::from_engine(ids.status());
            return std::vector<RequestId>(ids.value().begin(), ids.value().end());
        });
}

void Engine::cancel(RequestId id) { impl_->core.engine->cancel(id); }

Result<Generation> Engine::generate(Request request, const std::atomic<bool>* interrupt) {
    return api::guarded<Generation>("generating", [&]() -> Result<Generation> {
        const Sampling sampling = request.sampling;
        request.on_done = nullptr;
        base::Result<runtime::Request> r =
            api::runtime_request(std::move(request), *impl_->core.model->model);
        if (!r.ok()) return api::refuse(*impl_, r.status(), 1);
        base::Result<runtime::RequestResult> done =
            impl_->core.wait_for(std::move(r).value(), interrupt);
        if (!done.ok()) return api::from_engine(done.status());
        return api::to_generation(std::move(done).value(), sampling);
    });
}

Engine::Stats Engine::stats() const {
    const runtime::Engine::Stats s = impl_->core.engine->stats();
    return {.slots = impl_->core.engine->slots(),
            .slots_busy = s.slots_busy,
            .queue_length = s.queue_length,
            .submitted = s.submitted,
            .refused = s.refused + impl_->refused.load(std::memory_order_relaxed),
            .stopped = s.stopped,
            .length = s.length,
            .cancelled = s.cancelled,
            .failed = s.failed,
            .prompt_tokens = s.prompt_tokens,
            .cached_prompt_tokens = s.cached_prompt_tokens,
            .generated_tokens = s.generated_tokens,
            .image_cache_hits = s.image_cache_hits};
}

void Engine::forget_prefixes() { impl_->core.engine->forget_prefixes(); }
int Engine::slots() const { return impl_->core.engine->slots(); }
int Engine::context_size() const { return impl_->core.context_size(); }
int Engine::threads() const { return impl_->core.threads(); }
std::string Engine::isa() const { return impl_->core.isa(); }
Precision Engine::precision() const { return impl_->core.precision(); }
std::string Engine::profile_report() const { return impl_->core.profile_report(); }

}  // namespace qvl
