#include "openai_format.h"

#include <fmt/format.h>

#include <atomic>
#include <random>

namespace qvl::serve {

namespace {

std::string usage_json(std::span<const Generation> results) {
    const Generation& r = results[0];
    int completion = 0;
    for (const Generation& c : results) completion += int(c.tokens.size());
    return fmt::format(
        "{{\"prompt_tokens\":{},\"completion_tokens\":{},\"total_tokens\":{},"
        "\"prompt_tokens_details\":{{\"cached_tokens\":{}}}}}",
        r.timings.prompt_tokens, completion, r.timings.prompt_tokens + completion,
        r.timings.cached_prompt_tokens);
}

std::string timings_json(std::span<const Generation> results, const ResponseTimings& t) {
    const Timings& b = t.engine;
    int prefilled = 0;
    for (const Generation& c : results)
        prefilled += c.timings.prompt_tokens - c.timings.cached_prompt_tokens;
    return fmt::format(
        "{{\"queue_ms\":{},\"image_decode_ms\":{},\"vision_ms\":{},\"prefill_ms\":{},"
        "\"ttft_ms\":{},\"decode_ms\":{},\"cached_prompt_tokens\":{},\"prefilled_tokens\":{}}}",
        json_number(b.queue_ms), json_number(b.image_decode_ms), json_number(b.vision_ms),
        json_number(b.prefill_ms), json_number(t.ttft_ms), json_number(b.decode_ms),
        results[0].timings.cached_prompt_tokens, prefilled);
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

std::string logprobs_json(std::span<const TokenLogprob> entries, const Model& model) {
    const auto token = [&](std::int32_t id, double logprob) {
        const std::string_view bytes = model.token_bytes(id);
        std::string list;
        for (const char c : bytes) {
            list +=
                fmt::format("{}{}", list.empty() ? "" : ",", int(static_cast<unsigned char>(c)));
        }
        return fmt::format("\"token\":{},\"logprob\":{},\"bytes\":[{}]", json_quote(bytes),
                           json_number(logprob), list);
    };
    std::string out = "{\"content\":[";
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const TokenLogprob& e = entries[i];
        out += fmt::format("{}{{{},\"top_logprobs\":[", i ? "," : "", token(e.token, e.logprob));
        for (std::size_t k = 0; k < e.top.size(); ++k) {
            out += fmt::format("{}{{{}}}", k ? "," : "", token(e.top[k].first, e.top[k].second));
        }
        out += "]}";
    }
    return out + "]}";
}

std::string_view finish_reason_with_calls(std::string_view finish_reason, bool has_calls) {
    return has_calls && finish_reason == "stop" ? std::string_view("tool_calls") : finish_reason;
}

namespace {

std::string tool_calls_json(const std::vector<ToolCall>& calls) {
    std::string out = "[";
    for (std::size_t k = 0; k < calls.size(); ++k) {
        out += fmt::format(
            "{}{{\"id\":{},\"type\":\"function\",\"function\":{{\"name\":{},\"arguments\":{}}}}}",
            k ? "," : "", json_quote(calls[k].id), json_quote(calls[k].name),
            json_quote(calls[k].arguments));
    }
    return out + "]";
}

std::string message_json(const Generation& r, const ToolAnswer* answer) {
    if (answer == nullptr) {
        return fmt::format("{{\"role\":\"assistant\",\"content\":{}}}", json_quote(r.text));
    }
    const bool calls = !answer->calls.empty();
    const std::string content =
        calls && answer->content.empty() ? "null" : json_quote(answer->content);
    return fmt::format("{{\"role\":\"assistant\",\"content\":{}{}}}", content,
                       calls ? ",\"tool_calls\":" + tool_calls_json(answer->calls) : "");
}

}  // namespace

std::string completion_json(const CompletionHeader& h, std::span<const Generation> results,
                            const ResponseTimings& t, std::span<const std::string> logprobs,
                            std::span<const ToolAnswer> answers) {
    std::string choices;
    for (std::size_t i = 0; i < results.size(); ++i) {
        const std::string_view lp =
            i < logprobs.size() && !logprobs[i].empty() ? logprobs[i] : std::string_view("null");
        const ToolAnswer* answer = i < answers.size() ? &answers[i] : nullptr;
        const std::string_view finish = finish_reason_with_calls(
            results[i].finish_reason, answer != nullptr && !answer->calls.empty());
        choices +=
            fmt::format("{}{{\"index\":{},\"message\":{},\"logprobs\":{},\"finish_reason\":{}}}",
                        i ? "," : "", i, message_json(results[i], answer), lp, json_quote(finish));
    }
    return fmt::format("{{{},\"choices\":[{}],\"usage\":{},\"timings\":{}}}",
                       header_json(h, "chat.completion"), choices, usage_json(results),
                       timings_json(results, t));
}

std::string chunk_event(const CompletionHeader& h, int index, std::string_view content, bool first,
                        std::string_view logprobs) {
    return fmt::format(
        "data: {{{},\"choices\":[{{\"index\":{},\"delta\":{{{}\"content\":{}}},"
        "\"logprobs\":{},\"finish_reason\":null}}]}}\n\n",
        header_json(h, "chat.completion.chunk"), index, first ? "\"role\":\"assistant\"," : "",
        json_quote(content), logprobs.empty() ? std::string_view("null") : logprobs);
}

std::string tool_call_chunk_events(const CompletionHeader& h, int index, int call_index,
                                   const ToolCall& call, bool first) {
    const std::string head = header_json(h, "chat.completion.chunk");
    return fmt::format(
        "data: {{{0},\"choices\":[{{\"index\":{1},\"delta\":{{{2}\"tool_calls\":[{{\"index\":{3},"
        "\"id\":{4},\"type\":\"function\",\"function\":{{\"name\":{5},\"arguments\":\"\"}}}}]}},"
        "\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        "data: {{{0},\"choices\":[{{\"index\":{1},\"delta\":{{\"tool_calls\":[{{\"index\":{3},"
        "\"function\":{{\"arguments\":{6}}}}}]}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
        head, index, first ? "\"role\":\"assistant\",\"content\":null," : "", call_index,
        json_quote(call.id), json_quote(call.name), json_quote(call.arguments));
}

std::string final_chunk_event(const CompletionHeader& h, int index,
                              std::string_view finish_reason) {
    return fmt::format(
        "data: {{{},\"choices\":[{{\"index\":{},\"delta\":{{}},\"logprobs\":null,"
        "\"finish_reason\":{}}}]}}\n\n",
        header_json(h, "chat.completion.chunk"), index, json_quote(finish_reason));
}

std::string usage_chunk_event(const CompletionHeader& h, std::span<const Generation> results,
                              const ResponseTimings& t) {
    return fmt::format("data: {{{},\"choices\":[],\"usage\":{},\"timings\":{}}}\n\n",
                       header_json(h, "chat.completion.chunk"), usage_json(results),
                       timings_json(results, t));
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
