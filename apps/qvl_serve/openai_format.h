// The JSON bodies of the OpenAI Chat Completions API that qvl-serve writes (shared
// docs/serve.md): completion objects, streamed chunks, errors, the model list.
#pragma once

#include <qvl/qvl.h>

#include <cstdint>
#include <string>
#include <string_view>

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

// Extension timings: the Engine's queue_ms ... decode_ms, and ttft_ms measured from the
// request's arrival.
struct ResponseTimings {
    Timings engine;
    double ttft_ms = 0;
};

std::string completion_json(const CompletionHeader& h, const Generation& r,
                            std::string_view finish_reason, const ResponseTimings& t);

// One SSE event "data: {chunk}\n\n". first: the delta carries role "assistant".
std::string chunk_event(const CompletionHeader& h, std::string_view content, bool first);
// The last chunk: empty delta, finish_reason, and usage + timings when include_usage.
std::string final_chunk_event(const CompletionHeader& h, const Generation& r,
                              std::string_view finish_reason, bool include_usage,
                              const ResponseTimings& t);

std::string models_json(std::string_view model_id, std::int64_t created);

// A fresh "chatcmpl-<24 hex>" id.
std::string new_completion_id();

}  // namespace qvl::serve
