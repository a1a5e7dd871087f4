#include "prompt_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <system_error>

#include "base/timer.h"
#include "text/chat_template.h"

namespace qvl::serve {
namespace {

using base::ErrorCode;

// A file:// path, resolved through symlinks and "..", must lie inside the media folder.
base::Result<std::filesystem::path> resolve_media_path(const std::string& path,
                                                       const std::filesystem::path& root,
                                                       const std::string& where) {
    if (root.empty()) {
        return base::error(ErrorCode::kInvalidArgument, "{}: file:// URLs are refused", where);
    }
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(path, ec);
    if (ec) {
        return base::error(ErrorCode::kNotFound, "{}: {}: {}", where, path, ec.message());
    }
    const auto [root_end, real_it] =
        std::mismatch(root.begin(), root.end(), real.begin(), real.end());
    if (root_end != root.end()) {
        return base::error(ErrorCode::kInvalidArgument,
                           "{}: {} is outside the allowed media folder", where, path);
    }
    return real;
}

// Sampling penalties arrive in runtime::SamplingParams in a later engine version: set them when
// the fields exist, so requests carrying them are validated now and honoured then.
template <class S>
void set_penalties(S& s, const ChatRequest& r, const model::GenerationConfig& gen) {
    if constexpr (requires { s.repetition_penalty; }) {
        s.repetition_penalty = r.repetition_penalty.value_or(gen.repetition_penalty);
    }
    if constexpr (requires { s.presence_penalty; }) {
        s.presence_penalty = r.presence_penalty.value_or(0.0f);
    }
    if constexpr (requires { s.frequency_penalty; }) {
        s.frequency_penalty = r.frequency_penalty.value_or(0.0f);
    }
}

}  // namespace

base::Result<runtime::PreparedPrompt> build_prompt(const model::Model& model,
                                                   const ChatRequest& request,
                                                   const PromptOptions& options) {
    runtime::PreparedPrompt out;
    std::vector<int> tokens_per_image;
    std::vector<text::ChatMessage> messages;
    io::Image img;
    for (const RequestMessage& m : request.messages) {
        text::ChatMessage cm{.role = m.role};
        for (const RequestPart& part : m.parts) {
            if (part.kind == RequestPart::Kind::kText) {
                cm.parts.push_back({.kind = text::ChatPart::Kind::kText, .text = part.text});
                continue;
            }
            const ImageRef& ref = part.image;
            base::Timer t;
            if (!ref.remote_url.empty()) {
                // image_decode_ms counts the fetch: the time to get the image's pixels
                base::Result<std::vector<std::byte>> bytes =
                    fetch_media(ref.remote_url, options.fetch);
                if (!bytes.ok()) return bytes.status().with_context(ref.where + ": ");
                QVL_TRY(
                    io::decode_image_into(bytes.value(), options.image_limits, ref.where, &img));
            } else if (!ref.file_path.empty()) {
                QVL_ASSIGN_OR_RETURN(
                    const std::filesystem::path path,
                    resolve_media_path(ref.file_path, options.allowed_media_dir, ref.where));
                base::Status st = io::load_image_into(path, options.image_limits, &img);
                if (!st.ok()) return st.with_context(ref.where + ": ");
            } else {
                QVL_TRY(io::decode_image_into(ref.bytes, options.image_limits, ref.where, &img));
            }
            out.image_decode_ms += t.elapsed_ms();
            t.reset();
            base::Result<image::PreprocessedImage> pre =
                image::preprocess_image(img, options.preprocess);
            if (!pre.ok()) return pre.status().with_context(ref.where + ": ");
            out.preprocess_ms += t.elapsed_ms();
            const image::PreprocessedImage& p = pre.value();
            const int merge = options.preprocess.merge_size;
            const int tokens = p.grid_t * p.grid_h * p.grid_w / (merge * merge);
            out.infos.push_back({.path = ref.where,
                                 .width = img.width,
                                 .height = img.height,
                                 .resized_width = p.resized_width,
                                 .resized_height = p.resized_height,
                                 .tokens = tokens});
            tokens_per_image.push_back(tokens);
            out.images.push_back(std::move(pre).value());
            cm.parts.push_back({.kind = text::ChatPart::Kind::kImage, .image_path = ref.where});
        }
        messages.push_back(std::move(cm));
    }
    const std::string text = text::render_chat(messages, true);
    QVL_ASSIGN_OR_RETURN(std::vector<std::int32_t> ids, model.tokenizer().encode(text));
    QVL_ASSIGN_OR_RETURN(
        out.ids, text::expand_image_pads(ids, model.config().image_token_id, tokens_per_image));
    return out;
}

base::Result<runtime::GenerateParams> build_generate_params(const model::Model& model,
                                                            const ChatRequest& request,
                                                            int prompt_tokens, int ctx_size) {
    runtime::GenerateParams gp;
    const model::GenerationConfig& gen = model.generation();
    runtime::SamplingParams& s = gp.sampling;
    if (gen.do_sample) {
        s.temperature = gen.temperature;
        s.top_k = gen.top_k;
        s.top_p = gen.top_p;
    }
    if (request.temperature) s.temperature = *request.temperature;
    if (request.top_k) s.top_k = *request.top_k;
    if (request.top_p) s.top_p = *request.top_p;
    s.seed = request.seed ? *request.seed : std::random_device{}();
    set_penalties(s, request, gen);
    s.logit_bias = request.logit_bias;
    gp.top_logprobs = request.top_logprobs;
    gp.grammar = request.grammar;
    gp.ignore_eos = request.ignore_eos;
    gp.stop_ids = runtime::default_stop_ids(model);
    const int room = ctx_size - prompt_tokens;
    if (room < 1 || (request.max_tokens && *request.max_tokens > room)) {
        return base::error(ErrorCode::kOutOfRange,
                           "the prompt of {} tokens plus {} new tokens does not fit the context "
                           "of {} tokens per slot (shorten the conversation, lower max_tokens or "
                           "image sizes, or start the server with a larger -c)",
                           prompt_tokens, request.max_tokens.value_or(1), ctx_size);
    }
    gp.n_predict = request.max_tokens.value_or(room);
    return gp;
}

}  // namespace qvl::serve
