#include "openai_format.h"

#include <fmt/format.h>

#include <atomic>
#include <random>

namespace qvl::serve {

namespace {

std::string usage_json(const Generation& r) {
    const int completion = int(r.tokens.size());
    return fmt::format(
        "{{\"prompt_tokens\":{},\"completion_tokens\":{},\"total_tokens\":{},"
        "\"prompt_tokens_details\":{{\"cached_tokens\":{}}}}}",
        r.timings.prompt_tokens, completion, r.timings.prompt_tokens + completion,
        r.timings.cached_prompt_tokens);
}

std::string timings_json(const Generation& r, const ResponseTimings& t) {
    const Timings& b = t.engine;
    return fmt::format(
        "{{\"queue_ms\":{},\"image_decode_ms\":{},\"vision_ms\":{},\"prefill_ms\":{},"
        "\"ttft_ms\":{},\"decode_ms\":{},\"cached_prompt_tokens\":{}}}",
        json_number(b.queue_ms), json_number(b.image_decode_ms), json_number(b.vision_ms),
        json_number(b.prefill_ms), json_number(t.ttft_ms), json_number(b.decode_ms),
        r.timings.cached_prompt_tokens);
}

std::string header_json(const CompletionHeader& h, const char* object) {
    return fmt::format("\"id\":{},\"object\":\"{}\",\"created\":{},\"model\":{}", json_quote(h.id),
                       object, h.created, json_quote(h.model));
}

}  // namespace

std::string error_json(const ApiError& e) {
    return fmt::format("{{\"error\":{{\"message\":{},\"type\":{},\"param\":null,\"code\":{}}}}}",
                       json_quote(e.message), json_quote(e.type),
                       e.code.empty() ? "null" : json_quote(e.code));
}

std::string completion_json(const CompletionHeader& h, const Generation& r,
                            std::string_view finish_reason, const ResponseTimings& t) {
    return fmt::format(
        "{{{},\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":{}}},"
        "\"logprobs\":null,\"finish_reason\":{}}}],\"usage\":{},\"timings\":{}}}",
        header_json(h, "chat.completion"), json_quote(r.text), json_quote(finish_reason),
        usage_json(r), timings_json(r, t));
}

std::string chunk_event(const CompletionHeader& h, std::string_view content, bool first) {
    return fmt::format(
        "data: {{{},\"choices\":[{{\"index\":0,\"delta\":{{{}\"content\":{}}},"
        "\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
        header_json(h, "chat.completion.chunk"), first ? "\"role\":\"assistant\"," : "",
        json_quote(content));
}

std::string final_chunk_event(const CompletionHeader& h, const Generation& r,
                              std::string_view finish_reason, bool include_usage,
                              const ResponseTimings& t) {
    std::string extra;
    if (include_usage) {
        extra = fmt::format(",\"usage\":{},\"timings\":{}", usage_json(r), timings_json(r, t));
    }
    return fmt::format(
        "data: {{{},\"choices\":[{{\"index\":0,\"delta\":{{}},\"logprobs\":null,"
        "\"finish_reason\":{}}}]{}}}\n\n",
        header_json(h, "chat.completion.chunk"), json_quote(finish_reason), extra);
}

std::string models_json(std::string_view model_id, std::int64_t created) {
    return fmt::format(
        "{{\"object\":\"list\",\"data\":[{{\"id\":{},\"object\":\"model\",\"created\":{},"
        "\"owned_by\":\"qvl\"}}]}}",
        json_quote(model_id), created);
}

std::string new_completion_id() {
    static const std::uint64_t base = std::random_device{}() * 0x9E3779B97F4A7C15ull;
    static std::atomic<std::uint64_t> counter{0};
    std::uint64_t x = base ^ (counter.fetch_add(1) * 0xBF58476D1CE4E5B9ull);
    x ^= x >> 31;
    return fmt::format("chatcmpl-{:016x}{:08x}", x, std::uint32_t(counter.load()));
}

}  // namespace qvl::serve
