#include "runtime/generate.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/timer.h"

namespace qvl::runtime {

base::Result<PreparedPrompt> prepare_chat_prompt(const model::Model& model,
                                                 std::span<const text::ChatMessage> messages,
                                                 const image::PreprocessConfig& preprocess,
                                                 const io::ImageLimits& limits) {
    return prepare_chat_prompt_with(
        model, messages, preprocess, [&limits](int, const text::ChatPart& part) {
            // An image given as bytes (stdin, an upload) is decoded
            // from memory; image_path then only names it.
            if (!part.image_bytes.empty()) {
                return io::decode_image(std::as_bytes(std::span(part.image_bytes)), limits,
                                        part.image_path);
            }
            return io::load_image(part.image_path, limits);
        });
}

base::Result<PreparedPrompt> prepare_chat_prompt_with(const model::Model& model,
                                                      std::span<const text::ChatMessage> messages,
                                                      const image::PreprocessConfig& preprocess,
                                                      const ImageLoader& load) {
    PreparedPrompt out;
    std::vector<int> tokens_per_image;
    for (const text::ChatMessage& m : messages) {
        for (const text::ChatPart& part : m.parts) {
            if (part.kind != text::ChatPart::Kind::kImage) continue;
            base::Timer t;
            QVL_ASSIGN_OR_RETURN(io::Image img, load(int(tokens_per_image.size()), part));
            out.image_decode_ms += t.elapsed_ms();
            t.reset();
            base::Result<image::PreprocessedImage> pre = image::preprocess_image(img, preprocess);
            if (!pre.ok()) return pre.status().with_context(part.image_path + ": ");
            out.preprocess_ms += t.elapsed_ms();
            const image::PreprocessedImage& p = pre.value();
            const int tokens = p.num_image_tokens();
            out.infos.push_back({.path = part.image_path,
                                 .width = img.width,
                                 .height = img.height,
                                 .resized_width = p.resized_width,
                                 .resized_height = p.resized_height,
                                 .tokens = tokens});
            tokens_per_image.push_back(tokens);
            out.images.push_back(std::move(pre).value());
        }
    }
    const std::string text = text::render_chat(messages, true);
    const text::Tokenizer& tok = model.tokenizer();
    QVL_ASSIGN_OR_RETURN(std::vector<std::int32_t> ids, tok.encode(text));
    QVL_ASSIGN_OR_RETURN(
        out.ids, text::expand_image_pads(ids, model.config().image_token_id, tokens_per_image));
    return out;
}

base::Result<PreparedPrompt> prepare_raw_prompt(const model::Model& model, std::string_view text) {
    PreparedPrompt out;
    // An <|image_pad|> written in raw text tokenizes (for --tokenize) but cannot be prefilled:
    // raw prompts carry no images, and prefill says so.
    QVL_ASSIGN_OR_RETURN(out.ids, model.tokenizer().encode(text));
    return out;
}

std::vector<std::int32_t> default_stop_ids(const model::Model& model) {
    std::vector<std::int32_t> ids = model.generation().eos_token_ids;
    for (const char* name : {"<|im_end|>", "<|endoftext|>"}) {
        const std::int32_t id = model.tokenizer().token_id(name);
        if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    return ids;
}

base::Result<GenerateResult> generate(Session& session, const PreparedPrompt& prompt,
                                      const GenerateParams& params, const GenerateHooks& hooks) {
    GenerateResult r;
    if (prompt.ids.empty()) {
        return base::error(base::ErrorCode::kInvalidArgument, "the prompt is empty");
    }
    QVL_TRY(check_context_fits(
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
            r.logprobs.push_back(token_logprobs(session.logits(0), token, params.top_logprobs));
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

}  // namespace qvl::runtime
