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
                                                      const ImageLoader& load,
                                                      std::span<const text::ChatTool> tools,
                                                      bool add_generation_prompt) {
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
    const std::string text = text::render_chat(messages, add_generation_prompt, tools);
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

}  // namespace qvl::runtime
