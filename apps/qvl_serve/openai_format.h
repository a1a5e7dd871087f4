// The JSON bodies of the OpenAI Chat Completions API that qvl-serve writes (shared
// docs/serve.md): completion objects, streamed chunks, errors, the model list.
#pragma once

#include <qvl/qvl.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::serve {

struct ApiError {
    int status = 400;
    std::string type = "invalid_request_error";
    std::string code;  // "" -> null
    std::string message;
};

// {"error": {"message": ..., "type": ..., "code": ..., "param": null}}
std::string error_json(const ApiError& e);

struct CompletionHeader {
    std::string id;     // chatcmpl-...
    std::string model;  // echoed from the request (else the model folder name)
    std::int64_t created = 0;
};

// Extension timings: queue_ms ... ttft_ms (measured from the request's arrival).
struct ResponseTimings {
    Timings engine;  // the Engine's queue_ms ... decode_ms
    double ttft_ms = 0;
};

// OpenAI's choice logprobs object, {"content": [{"token", "logprob", "bytes",
// "top_logprobs": [{"token", "logprob", "bytes"}]}]}: token is the token's bytes as text
// (a byte sequence that is not whole UTF-8 shows U+FFFD; bytes has them exactly).
std::string logprobs_json(std::span<const TokenLogprob> entries, const Model& model);

// A choice's answer read for tool calls (ToolCallParser): its content and its calls. The
// message then has "content" (null when empty and there are calls) and "tool_calls", and a
// finish_reason "stop" becomes "tool_calls" when there are calls.
struct ToolAnswer {
    std::string content;
    std::vector<ToolCall> calls;
};
std::string_view finish_reason_with_calls(std::string_view finish_reason, bool has_calls);

// choices[i] is results[i] (OpenAI's n); answers[i], when given, its message read for calls;
// logprobs[i] its logprobs object, or "" for null (an empty span: null for all). usage counts the
// prompt once and every choice's tokens; t is choice 0's (the timings extension adds
// prefilled_tokens: prompt tokens prefilled for all the choices together, the prompt once when the
// others started from its prefill).
std::string completion_json(const CompletionHeader& h, std::span<const Generation> results,
                            const ResponseTimings& t, std::span<const std::string> logprobs = {},
                            std::span<const ToolAnswer> answers = {});

// One SSE event "data: {chunk}\n\n" of choice `index`. first: the delta carries role
// "assistant". logprobs: the entries of the tokens since the last chunk as a logprobs object,
// or "" for null.
std::string chunk_event(const CompletionHeader& h, int index, std::string_view content, bool first,
                        std::string_view logprobs = {});
// The chunks of one tool call of choice `index`, as OpenAI streams them: the first delta has the
// call's index, id, type and name with empty arguments, the next the arguments.
std::string tool_call_chunk_events(const CompletionHeader& h, int index, int call_index,
                                   const ToolCall& call, bool first);
// The chunk that ends choice `index`: empty delta and finish_reason.
std::string final_chunk_event(const CompletionHeader& h, int index, std::string_view finish_reason);
// With stream_options.include_usage, after the final chunks: "choices": [] with usage (and the
// timings extension), as OpenAI sends it.
std::string usage_chunk_event(const CompletionHeader& h, std::span<const Generation> results,
                              const ResponseTimings& t);

std::string models_json(std::string_view model_id, std::int64_t created);

// A fresh "chatcmpl-<24 hex>" id.
std::string new_completion_id();

}  // namespace qvl::serve
