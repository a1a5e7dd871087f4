// qvl::Session of the public header: a thin adapter over runtime::Session and
// runtime::generate (one conversation, one slot).
#include <exception>

#include "api/convert.h"
#include "api/internals.h"

namespace qvl {
namespace {

// The engine does not throw; a stray std::bad_alloc from a container becomes a Status here,
// so nothing crosses the API as an exception.
template <class T, class Fn>
Result<T> guarded(const char* what, Fn&& fn) {
    try {
        return fn();
    } catch (const std::exception& e) {
        return Status(ErrorCode::kResourceExhausted, std::string(what) + ": " + e.what());
    }
}

Result<Prompt> wrap_prompt(base::Result<runtime::PreparedPrompt> prepared) {
    if (!prepared.ok()) return api::from_engine(prepared.status());
    auto impl = std::make_unique<Prompt::Impl>();
    impl->prepared = std::move(prepared).value();
    for (const runtime::ImageInfo& i : impl->prepared.infos) {
        impl->infos.push_back({.name = i.path,
                               .width = i.width,
                               .height = i.height,
                               .resized_width = i.resized_width,
                               .resized_height = i.resized_height,
                               .tokens = i.tokens});
    }
    return Prompt(std::move(impl));
}

runtime::SamplingParams to_engine(const Sampling& s) {
    runtime::SamplingParams p;
    p.temperature = s.temperature;
    p.top_k = s.top_k;
    p.top_p = s.top_p;
    p.seed = s.seed;
    p.repetition_penalty = s.repetition_penalty;
    p.presence_penalty = s.presence_penalty;
    return p;
}

Sampling model_sampling(const model::Model& m) {
    Sampling s;
    const model::GenerationConfig& gen = m.generation();
    if (gen.do_sample) {
        s.temperature = gen.temperature;
        s.top_k = gen.top_k;
        s.top_p = gen.top_p;
    }
    // A logits processor, not a sampling warper: Hugging Face applies it to greedy runs too.
    s.repetition_penalty = gen.repetition_penalty;
    return s;
}

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Result<Session> Session::create(const Model& model, const SessionOptions& options) {
    return guarded<Session>("creating the session", [&]() -> Result<Session> {
        base::Result<runtime::SessionOptions> so = api::to_engine(options);
        if (!so.ok()) return api::from_engine(so.status());
        auto impl = std::make_unique<Impl>();
        impl->model = model.impl();
        base::Result<std::unique_ptr<runtime::Session>> s =
            runtime::Session::create(*model.impl()->model, so.value());
        if (!s.ok()) return api::from_engine(s.status());
        impl->session = std::move(s).value();
        impl->preprocess = runtime::effective_preprocess(*model.impl()->model, so.value());
        // The resized image feeds the fused patch embedding; pixel_values are not needed.
        impl->preprocess.pixel_values = false;
        impl->profile = options.profile;
        return Session(std::move(impl));
    });
}

Result<Prompt> Session::prepare(const std::vector<Message>& messages) const {
    return guarded<Prompt>("preparing the prompt", [&] {
        const io::ImageLimits limits;
        const std::vector<text::ChatMessage> chat = api::to_engine(messages);
        return wrap_prompt(runtime::prepare_chat_prompt_with(
            *impl_->model->model, chat, impl_->preprocess, [&](int index, const text::ChatPart&) {
                return api::load_image_part(messages, index, limits);
            }));
    });
}

Result<Prompt> Session::prepare_raw(std::string_view text) const {
    return guarded<Prompt>("preparing the prompt", [&] {
        return wrap_prompt(runtime::prepare_raw_prompt(*impl_->model->model, text));
    });
}

Result<Generation> Session::generate(const Prompt& prompt, const GenerateOptions& options) {
    return guarded<Generation>("generating", [&]() -> Result<Generation> {
        const model::Model& m = *impl_->model->model;
        const Sampling sampling = options.sampling.value_or(model_sampling(m));
        if (!(sampling.repetition_penalty > 0.0f) || !(sampling.presence_penalty >= -2.0f) ||
            !(sampling.presence_penalty <= 2.0f)) {
            return Status(ErrorCode::kInvalidArgument,
                          "repetition_penalty must be > 0 and presence_penalty in [-2, 2]");
        }
        runtime::GenerateParams params;
        params.n_predict = options.n_predict;
        params.ignore_eos = options.ignore_eos;
        params.sampling = to_engine(sampling);
        params.stop_ids = runtime::default_stop_ids(m);
        params.cancel = options.cancel;
        runtime::GenerateHooks hooks;
        hooks.on_text = options.on_text;
        base::Result<runtime::GenerateResult> r =
            runtime::generate(*impl_->session, prompt.impl().prepared, params, hooks);
        if (!r.ok()) return api::from_engine(r.status());
        runtime::GenerateResult& g = r.value();
        return Generation{.tokens = std::move(g.tokens),
                          .text = std::move(g.text),
                          .finish_reason = std::move(g.finish_reason),
                          .sampling = sampling,
                          .timings = {.vision_ms = g.vision_ms,
                                      .prefill_ms = g.prefill_ms,
                                      .decode_ms = g.decode_ms,
                                      .ttft_ms = g.ttft_ms,
                                      .prompt_tokens = int(prompt.token_ids().size()),
                                      .decoded_steps = g.decoded_steps}};
    });
}

void Session::reset() { impl_->session->reset(); }
int Session::context_used() const { return impl_->session->context_used(); }
int Session::context_size() const { return impl_->session->context_size(); }
int Session::threads() const { return impl_->session->threads(); }
std::string Session::isa() const { return kernels::isa_name(impl_->session->isa()); }
Precision Session::precision() const { return api::from_engine(impl_->session->precision()); }
std::string Session::profile_report() const {
    return impl_->profile ? impl_->session->profile().format() : std::string();
}

}  // namespace qvl
