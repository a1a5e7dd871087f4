// From a parsed chat request to what the runtime runs: images decoded from memory (data: URIs),
// read from --allowed-media-dir (file:// URLs) or fetched from --allowed-media-hosts (http(s)
// URLs; image_decode_ms includes the fetch), preprocessed, the chat template rendered and
// tokenized with the image pads expanded (the same steps as runtime::prepare_chat_prompt, which
// reads images from paths only), and the generation settings with the model's defaults.
// Runs on the HTTP thread, so image decoding of one request overlaps generation of others.
#pragma once

#include <filesystem>

#include "base/status.h"
#include "chat_request.h"
#include "image/image_preprocess.h"
#include "io/image.h"
#include "media_fetch.h"
#include "model/model.h"
#include "runtime/generate.h"

namespace qvl::serve {

struct PromptOptions {
    image::PreprocessConfig preprocess;
    io::ImageLimits image_limits;
    std::filesystem::path allowed_media_dir;  // empty: file:// refused
    FetchLimits fetch;                        // http(s) URLs (hosts checked by the parser)
};

// Errors are client errors (HTTP 400) and name the message part: an image that cannot be read
// or decoded, over the pixel limit, outside the media folder.
base::Result<runtime::PreparedPrompt> build_prompt(const model::Model& model,
                                                   const ChatRequest& request,
                                                   const PromptOptions& options);

// The generation settings: the request's, else the model's generation_config.json (as qvl-run).
// Without max_tokens, generation may fill the slot's context. kOutOfRange (HTTP 400) when the
// prompt plus max_tokens does not fit ctx_size.
base::Result<runtime::GenerateParams> build_generate_params(const model::Model& model,
                                                            const ChatRequest& request,
                                                            int prompt_tokens, int ctx_size);

}  // namespace qvl::serve
