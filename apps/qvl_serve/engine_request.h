// From a parsed chat request to what the Engine (qvl/qvl.h) takes: messages whose images are the
// data: URIs' bytes, file:// URLs or http(s) URLs, the resolver that holds file:// URLs to
// --allowed-media-dir and fetches http(s) URLs (hosts already checked by the parser; the
// prompt's image_decode_ms counts the fetch), the sampling (Model::sampling:
// generation_config.json, then the request's values) and the number of new tokens.
#pragma once

#include <qvl/qvl.h>

#include <filesystem>
#include <vector>

#include "chat_request.h"
#include "media_fetch.h"

namespace qvl::serve {

// The request's messages; image bytes and tool calls are moved out of `messages`. Image parts are
// named by their place in the request ("messages[1].content[0]"), which errors then cite.
std::vector<Message> engine_messages(std::vector<RequestMessage>& messages);

// Resolves file:// parts to files inside `allowed_media_dir` (after symlinks and ".."; an
// empty folder refuses them) and http(s) parts to their bytes, fetched within `fetch`. Errors
// are client errors naming the part.
MediaResolver media_resolver(std::filesystem::path allowed_media_dir, FetchLimits fetch);

// The request's sampling over the model's generation_config.json (an unset seed is random), its
// logit_bias and logprobs.
Sampling request_sampling(const Model& model, const ChatRequest& request);

// max_tokens, or what the slot's context leaves after the prompt. kOutOfRange (HTTP 400) when
// the prompt plus max_tokens does not fit ctx_size.
Result<int> new_tokens(const ChatRequest& request, int prompt_tokens, int ctx_size);

}  // namespace qvl::serve
