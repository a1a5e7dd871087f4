// The body of POST /v1/chat/completions (shared docs/serve.md) parsed into what the server
// needs: messages with text, image and video parts, and the sampling settings. Pure: no file
// system, no model. Every refusal is kInvalidArgument (HTTP 400) with a message naming the field,
// e.g. "messages[1].content[0].image_url.url: invalid base64 character '%' at offset 12". A
// top-level key the server does not implement is refused, naming it (nothing a client asks for is
// ignored in silence): any key not listed in chat_request.cpp; `user` and `metadata` are accepted
// and ignored, and a key whose value is null counts as absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace qvl::serve {

// An image_url or video_url part's media.
struct ImageRef {
    std::vector<std::uint8_t> bytes;  // from a data: URI, base64-decoded
    std::string file_path;   // from a file:// URL; checked against --allowed-media-dir later
    std::string remote_url;  // an http(s) URL whose host is allowed; fetched later
    std::string where;       // "messages[1].content[0]", for error messages
};

struct RequestPart {
    enum class Kind { kText, kImage, kVideo } kind = Kind::kText;
    std::string text;
    ImageRef image;  // kImage, kVideo
};

struct RequestMessage {
    std::string role;  // system | user | assistant | tool ("developer" is read as system)
    std::vector<RequestPart> parts;
    std::vector<ToolCall> tool_calls;  // assistant: the calls it made
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
    std::vector<std::pair<std::int32_t, float>> logit_bias;  // ids in the vocabulary, [-100, 100]
    int n = 1;                                               // choices
    // logprobs: -1 off (logprobs false or absent), else top_logprobs (0..20).
    int top_logprobs = -1;
    // response_format json_object / json_schema, or tool_choice "required" / a named function:
    // the constraint the answer follows (else empty).
    OutputConstraint constraint;
    Tools tools;  // tools, tool_choice, parallel_tool_calls
};

struct ParseLimits {
    int max_images = 64;  // image and video parts per request
    int max_stop = 16;    // stop strings
    std::size_t max_stop_bytes = 256;
    bool allow_file_urls = false;  // --allowed-media-dir given
    // --allowed-media-hosts: http(s) image and video URLs whose host is one of these (compared
    // without case); empty: every http(s) URL is refused.
    std::vector<std::string> allowed_media_hosts;
    int max_tokens_limit = 1 << 20;
    int vocab_size = 0;  // logit_bias ids must be below it (0: not checked)
    int max_n = 1;       // choices per request
};

// The host of an http:// or https:// URL, lower-cased, without port or user info; empty when
// the URL has none (or is not http(s)). "http://User@Example.com:8080/x" -> "example.com".
std::string url_host(std::string_view url);

Result<ChatRequest> parse_chat_request(std::string_view body, const ParseLimits& limits);

// The body of POST /tokenize: {"prompt": str} (raw text, no template), or {"messages",
// "tools", "add_generation_prompt" (default true)} with the messages and tools of a chat
// request (tool_choice and parallel_tool_calls accepted too). Any other field is refused.
struct TokenizeRequest {
    bool raw = false;
    std::string prompt;                    // raw
    std::vector<RequestMessage> messages;  // else
    Tools tools;
    bool add_generation_prompt = true;
    int image_count = 0;
};
Result<TokenizeRequest> parse_tokenize_request(std::string_view body, const ParseLimits& limits);

}  // namespace qvl::serve
