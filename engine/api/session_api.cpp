// qvl::Session of the public header: the Engine's core with one slot. generate() resends the
// conversation the session holds ahead of the new prompt; the Engine's prefix reuse keeps it in
// the slot's KV, so only the new ids are prefilled and the answer is the one an appended
// generation gives.
#include <fmt/format.h>

#include "api/convert.h"
#include "api/internals.h"
#include "grammar/output_grammar.h"
#include "runtime/kv_cache.h"

namespace qvl {
Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Result<Session> Session::create(const Model& model, const SessionOptions& options) {
    return api::guarded<Session>("creating the session", [&]() -> Result<Session> {
        // No image-feature cache: the held conversation's images stay in the slot's KV, and a
        // session's memory stays what it was (the KV arena and the work buffers).
        const EngineOptions eo{.session = options, .slots = 1, .max_queue = 1, .image_cache_mb = 0};
        base::Result<api::Core> core = api::Core::create(model, eo);
        if (!core.ok()) return api::from_engine(core.status());
        auto impl = std::make_unique<Impl>();
        impl->core = std::move(core).value();
        return Session(std::move(impl));
    });
}

Result<Prompt> Session::prepare(const std::vector<Message>& messages) const {
    return impl_->core.road.prepare(messages);
}

Result<Prompt> Session::prepare_raw(std::string_view text) const {
    return impl_->core.road.prepare_raw(text);
}

Result<Generation> Session::generate(const Prompt& prompt, const GenerateOptions& options) {
    return api::guarded<Generation>("generating", [&]() -> Result<Generation> {
        const Model model(impl_->core.model);
        const Sampling sampling =
            options.sampling.value_or(model.sampling({.seed = std::uint64_t(0)}));
        base::Result<runtime::SamplingParams> params =
            api::to_engine(sampling, impl_->core.model->model->config().text.vocab_size);
        if (!params.ok()) return api::from_engine(params.status());
        const runtime::PreparedPrompt& p = prompt.impl().prepared;
        if (p.ids.empty()) return Status(ErrorCode::kInvalidArgument, "the prompt is empty");
        std::vector<std::int32_t>& held = impl_->held_ids;
        const base::Status fits = runtime::check_context_fits(
            std::int64_t(held.size()), std::int64_t(p.ids.size()) + options.n_predict,
            impl_->core.engine->ctx_size(),
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
        request.params.sampling = params.value();
        request.params.top_logprobs = sampling.logprobs;
        base::Result<std::shared_ptr<const grammar::Grammar>> constraint =
            grammar::compile_output_grammar({.json_schema = options.json_schema,
                                             .gbnf = options.grammar,
                                             .json_object = options.json_object});
        if (!constraint.ok()) return api::from_engine(constraint.status());
        request.params.grammar = std::move(constraint).value();
        request.params.cancel = options.cancel;  // read before each token
        if (options.on_text) {
            request.on_text = [&on_text = options.on_text](std::string_view piece, std::int32_t) {
                on_text(piece);
            };
        }
        base::Result<runtime::RequestResult> r = impl_->core.wait_for(std::move(request), nullptr);
        if (!r.ok()) return api::from_engine(r.status());
        const runtime::RequestResult& g = r.value();

        // The context now holds the prompt and the decoded answer tokens: all of them but a
        // length-limited answer's last, which was sampled and never decoded.
        held.insert(held.end(), p.ids.begin(), p.ids.end());
        impl_->held_images.insert(impl_->held_images.end(), p.images.begin(), p.images.end());
        const std::size_t decoded = g.finish_reason == "length" && !g.tokens.empty()
                                        ? g.tokens.size() - 1
                                        : g.tokens.size();
        held.insert(held.end(), g.tokens.begin(), g.tokens.begin() + std::ptrdiff_t(decoded));
        Generation out = api::to_generation(std::move(r).value(), sampling);
        if (out.finish_reason == "cancelled") out.finish_reason = "interrupted";
        // A session counts the new prompt only (the held conversation is its context).
        out.timings.prompt_tokens = int(p.ids.size());
        return out;
    });
}

// The record goes; the slot's KV is forgotten too, so a new conversation never reuses it.
void Session::reset() {
    impl_->held_ids.clear();
    impl_->held_images.clear();
    impl_->core.engine->forget_prefixes();
}
int Session::context_used() const { return int(impl_->held_ids.size()); }
int Session::context_size() const { return impl_->core.context_size(); }
int Session::threads() const { return impl_->core.threads(); }
std::string Session::isa() const { return impl_->core.isa(); }
Precision Session::precision() const { return impl_->core.precision(); }
std::string Session::profile_report() const { return impl_->core.profile_report(); }

}  // namespace qvl
