#include "support/reference_generate.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/timer.h"
#include "runtime/kv_cache.h"
#include "runtime/sampler.h"
#include "text/tokenizer.h"

namespace qvl::test {

using runtime::Sampler;

base::Result<GenerateResult> generate(Session& session, const PreparedPrompt& prompt,
                                      const GenerateParams& params, const GenerateHooks& hooks) {
    GenerateResult r;
    if (prompt.ids.empty()) {
        return base::error(base::ErrorCode::kInvalidArgument, "the prompt is empty");
    }
    QVL_TRY(runtime::check_context_fits(
        session.context_used(), std::int64_t(prompt.ids.size()) + params.n_predict,
        session.context_size(),
        fmt::format("the prompt of {} tokens plus {} new", prompt.ids.size(), params.n_predict)));
    const base::Timer total;
    base::Timer t;
    for (const image::PreprocessedImage& image : prompt.images)
        QVL_TRY(session.encode_image(image));
    r.vision_ms = t.elapsed_ms();
    if (hooks.after_vision) hooks.after_vision(session);
    const model::Model& model = session.model();
    Sampler sampler(model.config().text.vocab_size, params.sampling);
    if (params.grammar) sampler.constrain(session.grammar_matcher(params.grammar, params.stop_ids));
    // Before the prefill: its logits are computed as this sampler needs them.
    session.expect_sampler(0, sampler);
    if (params.top_logprobs >= 0) session.set_full_logits(0, true);
    t.reset();
    QVL_TRY(session.prefill(prompt.ids));
    r.prefill_ms = t.elapsed_ms();
    if (hooks.after_prefill) hooks.after_prefill(session, 0);

    sampler.begin(prompt.ids);
    text::StreamDecoder stream(model.tokenizer(), true);
    r.tokens.reserve(params.n_predict);
    r.finish_reason = "length";
    t.reset();
    for (int i = 0; i < params.n_predict; ++i) {
        if (params.cancel != nullptr && params.cancel->load(std::memory_order_relaxed)) {
            r.finish_reason = "interrupted";
            break;
        }
        const std::int32_t token = session.sample(0, sampler);
        if (i == 0) r.ttft_ms = total.elapsed_ms();
        const bool stop = std::find(params.stop_ids.begin(), params.stop_ids.end(), token) !=
                          params.stop_ids.end();
        if (stop && !params.ignore_eos) {
            r.finish_reason = "stop";
            break;
        }
        r.tokens.push_back(token);
        if (params.top_logprobs >= 0) {
            r.logprobs.push_back(
                runtime::token_logprobs(session.logits(0), token, params.top_logprobs));
        }
        sampler.accept(token);
        const std::string_view piece = stream.push(token);
        r.text.append(piece);
        if (hooks.on_text && !piece.empty()) hooks.on_text(piece);
        if (i + 1 == params.n_predict) break;  // the last token needs no decode step
        QVL_TRY(session.decode(token));
        ++r.decoded_steps;
    }
    const std::string_view tail = stream.finish();
    r.text.append(tail);
    if (hooks.on_text && !tail.empty()) hooks.on_text(tail);
    r.decode_ms = t.elapsed_ms();
    return r;
}

}  // namespace qvl::test
