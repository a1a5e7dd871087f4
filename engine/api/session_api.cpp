// qvl::Session of the public header: an adapter over a runtime::Engine with one slot (the
// runtime qvl-run and the server use). generate() resends the conversation the session holds
// ahead of the new prompt; the Engine's prefix reuse keeps it in the slot's KV, so only the new
// ids are prefilled and the answer is the one an appended generation gives.
#include <fmt/format.h>

#include <exception>

#include "api/convert.h"
#include "api/internals.h"
#include "grammar/output_grammar.h"
#include "runtime/kv_cache.h"
#include "runtime/run_request.h"

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
    p.logit_bias = s.logit_bias;
    return p;
}

// The values the penalties, logit_bias and logprobs accept; "" when all are in range.
std::string sampling_error(const Sampling& s, int vocab) {
    if (!(s.repetition_penalty > 0.0f) || !(s.presence_penalty >= -2.0f) ||
        !(s.presence_penalty <= 2.0f)) {
        return "repetition_penalty must be > 0 and presence_penalty in [-2, 2]";
    }
    for (const auto& [id, bias] : s.logit_bias) {
        if (id < 0 || id >= vocab || !(bias >= -100.0f && bias <= 100.0f)) {
            return fmt::format(
                "logit_bias: token {} with bias {}: ids are in [0, {}), biases in "
                "[-100, 100]",
                id, bias, vocab);
        }
    }
    if (s.logprobs < -1 || s.logprobs > runtime::kMaxTopLogprobs) {
        return fmt::format("logprobs {} is outside -1..{}", s.logprobs, runtime::kMaxTopLogprobs);
    }
    return {};
}

std::vector<TokenLogprob> to_api(std::vector<runtime::TokenLogprobs>&& logprobs) {
    std::vector<TokenLogprob> out;
    out.reserve(logprobs.size());
    for (runtime::TokenLogprobs& t : logprobs) {
        out.push_back({.token = t.token, .logprob = t.logprob, .top = std::move(t.top)});
    }
    return out;
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
        // No image-feature cache: the held conversation's images stay in the slot's KV, and a
        // session's memory stays what it was (the KV arena and the work buffers).
        const runtime::EngineOptions eo{.slots = 1, .max_queue = 1, .image_cache_mb = 0};
        base::Result<std::unique_ptr<runtime::Engine>> e =
            runtime::Engine::create(*model.impl()->model, eo, so.value());
        if (!e.ok()) return api::from_engine(e.status());
        impl->engine = std::move(e).value();
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
        if (std::string e = sampling_error(sampling, m.config().text.vocab_size); !e.empty()) {
            return Status(ErrorCode::kInvalidArgument, std::move(e));
        }
        const runtime::PreparedPrompt& p = prompt.impl().prepared;
        if (p.ids.empty()) return Status(ErrorCode::kInvalidArgument, "the prompt is empty");
        std::vector<std::int32_t>& held = impl_->held_ids;
        const base::Status fits = runtime::check_context_fits(
            std::int64_t(held.size()), std::int64_t(p.ids.size()) + options.n_predict,
            impl_->engine->ctx_size(),
            fmt::format("the prompt of {} tokens plus {} new", p.ids.size(), options.n_predict));
        if (!fits.ok()) return api::from_engine(fits);

        runtime::Request request;
        request.prompt.ids.reserve(held.size() + p.ids.size());
        request.prompt.ids = held;
        request.prompt.ids.insert(request.prompt.ids.end(), p.ids.begin(), p.ids.end());
        request.prompt.images = impl_->held_images;
        request.prompt.images.insert(request.prompt.images.end(), p.images.begin(), p.images.end());
        request.prompt.image_decode_ms = p.image_decode_ms;
        request.penalty_from = held.size();  // penalties count the new prompt only
        request.params.n_predict = options.n_predict;
        request.params.ignore_eos = options.ignore_eos;
        request.params.sampling = to_engine(sampling);
        request.params.top_logprobs = sampling.logprobs;
        request.params.stop_ids = runtime::default_stop_ids(m);
        base::Result<std::shared_ptr<const grammar::Grammar>> constraint =
            grammar::compile_output_grammar({.json_schema = options.json_schema,
                                             .gbnf = options.grammar,
                                             .json_object = options.json_object});
        if (!constraint.ok()) return api::from_engine(constraint.status());
        request.params.grammar = std::move(constraint).value();
        request.params.cancel = options.cancel;  // read before each token, as generate() did
        if (options.on_text) {
            request.on_text = [&on_text = options.on_text](std::string_view piece, std::int32_t) {
                on_text(piece);
            };
        }
        base::Result<runtime::RequestResult> r =
            runtime::run_request(*impl_->engine, std::move(request), nullptr);
        if (!r.ok()) return api::from_engine(r.status());
        runtime::RequestResult& g = r.value();

        // The context now holds the prompt and the decoded answer tokens: all of them but a
        // length-limited answer's last, which was sampled and never decoded.
        held.insert(held.end(), p.ids.begin(), p.ids.end());
        impl_->held_images.insert(impl_->held_images.end(), p.images.begin(), p.images.end());
        const std::size_t decoded = g.finish_reason == "length" && !g.tokens.empty()
                                        ? g.tokens.size() - 1
                                        : g.tokens.size();
        held.insert(held.end(), g.tokens.begin(), g.tokens.begin() + std::ptrdiff_t(decoded));
        return Generation{
            .tokens = std::move(g.tokens),
            .text = std::move(g.text),
            .finish_reason = g.finish_reason == "cancelled" ? "interrupted" : g.finish_reason,
            .sampling = sampling,
            .timings = {.vision_ms = g.timings.vision,
                        .prefill_ms = g.timings.prefill,
                        .decode_ms = g.timings.decode,
                        .ttft_ms = g.timings.ttft,
                        .prompt_tokens = int(p.ids.size()),
                        .decoded_steps = g.decode_steps},
            .logprobs = to_api(std::move(g.logprobs))};
    });
}

// The record goes; the slot's KV is forgotten too, so a new conversation never reuses it.
void Session::reset() {
    impl_->held_ids.clear();
    impl_->held_images.clear();
    impl_->engine->forget_prefixes();
}
int Session::context_used() const { return int(impl_->held_ids.size()); }
int Session::context_size() const { return impl_->engine->ctx_size(); }
int Session::threads() const { return impl_->engine->threads(); }
std::string Session::isa() const { return kernels::isa_name(impl_->engine->isa()); }
Precision Session::precision() const { return api::from_engine(impl_->engine->precision()); }
std::string Session::profile_report() const {
    return impl_->profile ? impl_->engine->profile().format() : std::string();
}

}  // namespace qvl
