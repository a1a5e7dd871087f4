// The body of POST /v1/chat/completions (shared docs/serve.md) parsed into what the server
// needs: messages with text and image parts, and the sampling settings. Pure: no file system,
// no model. Every refusal is kInvalidArgument (HTTP 400) with a message naming the field, e.g.
// "messages[1].content[0].image_url.url: invalid base64 character '%' at offset 12".
// Unknown top-level keys are ignored, as OpenAI clients send many optional ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace qvl::serve {

struct ImageRef {
    std::vector<std::uint8_t> bytes;  // from a data: URI, base64-decoded
    std::string file_path;  // from a file:// URL; checked against --allowed-media-dir later
    std::string where;      // "messages[1].content[0]", for error messages
};

struct RequestPart {
    enum class Kind { kText, kImage } kind = Kind::kText;
    std::string text;
    ImageRef image;
};

struct RequestMessage {
    std::string role;  // system | user | assistant ("developer" is read as system)
    std::vector<RequestPart> parts;
};

struct ChatRequest {
    std::vector<RequestMessage> messages;
    std::string model;                        // echoed back
    std::optional<int> max_tokens;            // max_completion_tokens, else max_tokens
    std::optional<float> temperature;         // >= 0 (0: greedy)
    std::optional<float> top_p;               // (0, 1]
    std::optional<int> top_k;                 // >= 0 (0: off)
    std::optional<std::uint64_t> seed;        // negative seeds are taken modulo 2^64
    std::vector<std::string> stop;            // non-empty strings
    std::optional<float> presence_penalty;    // [-2, 2]
    std::optional<float> frequency_penalty;   // [-2, 2]
    std::optional<float> repetition_penalty;  // > 0 (1: off)
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    bool ignore_eos = false;
    int image_count = 0;
};

struct ParseLimits {
    int max_images = 64;  // image parts per request
    int max_stop = 16;    // stop strings
    std::size_t max_stop_bytes = 256;
    bool allow_file_urls = false;  // --allowed-media-dir given
    int max_tokens_limit = 1 << 20;
};

Result<ChatRequest> parse_chat_request(std::string_view body, const ParseLimits& limits);

}  // namespace qvl::serve
