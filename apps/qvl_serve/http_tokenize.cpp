// POST /tokenize and POST /detokenize (shared docs/serve.md, named as vLLM names them): the ids
// the model would see for a prompt or a conversation (chat template, tools block, image
// placeholders expanded), and the text of ids.
#include <fmt/format.h>

#include "engine_request.h"
#include "http_server.h"

namespace qvl::serve {

void HttpServer::handle_tokenize(const http::Request& req, http::Responder& res) {
    Result<TokenizeRequest> parsed = parse_tokenize_request(req.body, config_.parse_limits);
    if (!parsed.ok()) {
        reply_error(res, {.message = parsed.status().message()}, "client_error");
        return;
    }
    TokenizeRequest& t = parsed.value();
    Result<Prompt> prompt = [&] {
        if (t.raw) return engine_.prepare_raw(t.prompt);
        decode_slots_.acquire();  // images are decoded: as for a completion, a few at once
        Result<Prompt> p =
            engine_.prepare(engine_messages(t.messages), t.tools, t.add_generation_prompt);
        decode_slots_.release();
        return p;
    }();
    if (!prompt.ok()) {
        const bool internal = prompt.status().code() == ErrorCode::kInternal ||
                              prompt.status().code() == ErrorCode::kResourceExhausted;
        reply_error(res,
                    {.status = internal ? 500 : 400,
                     .type = internal ? "server_error" : "invalid_request_error",
                     .message = prompt.status().message()},
                    internal ? "error" : "client_error");
        return;
    }
    const std::vector<std::int32_t>& ids = prompt.value().token_ids();
    std::string out = "{\"tokens\":[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += fmt::format("{}{}", i ? "," : "", ids[i]);
    out += fmt::format("],\"count\":{},\"max_model_len\":{}}}", ids.size(), engine_.context_size());
    res.send(200, "application/json", out);
}

void HttpServer::handle_detokenize(const http::Request& req, http::Responder& res) {
    const auto bad = [&](const std::string& message) {
        reply_error(res, {.message = message}, "client_error");
    };
    Result<JsonValue> parsed = parse_json(req.body, "request body");
    if (!parsed.ok()) return bad("malformed JSON: " + parsed.status().message());
    const JsonValue& root = parsed.value();
    const JsonValue* tokens = root.is_object() ? root.find("tokens") : nullptr;
    if (tokens == nullptr || !tokens->is_array()) {
        return bad("body: expected {\"tokens\": [token ids]}");
    }
    for (const auto& [key, value] : root.members()) {
        if (key != "tokens" && key != "model" && !value.is_null()) {
            return bad(key + ": is not a /detokenize field (tokens is)");
        }
    }
    std::vector<std::int32_t> ids;
    for (std::size_t i = 0; i < tokens->items().size(); ++i) {
        const JsonValue& v = tokens->items()[i];
        if (!v.is_integer() || v.as_int() < 0 || v.as_int() > INT32_MAX) {
            return bad(fmt::format("tokens[{}]: not a token id", i));
        }
        ids.push_back(std::int32_t(v.as_int()));
    }
    Result<std::string> text = model_.detokenize(ids);
    if (!text.ok()) return bad("tokens: " + text.status().message());
    res.send(200, "application/json", "{\"prompt\":" + json_quote(text.value()) + "}");
}

}  // namespace qvl::serve
