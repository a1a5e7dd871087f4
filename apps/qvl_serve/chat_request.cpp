#include "chat_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

#include "base64.h"
#include "response_format.h"

namespace qvl::serve {
namespace {

Status bad(std::string_view where, std::string_view what) {
    return Status(ErrorCode::kInvalidArgument, fmt::format("{}: {}", where, what));
}

std::string type_of(const JsonValue& v) { return JsonValue::type_name(v.type()); }

// Numbers: the optional<T> is left empty for a JSON null (the model's default applies).
Status read_float(const JsonValue& root, std::string_view key, double lo, double hi, bool lo_open,
                  std::optional<float>* out) {
    const JsonValue* v = root.find(key);
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_number()) return bad(key, fmt::format("must be a number, not {}", type_of(*v)));
    const double d = v->as_double();
    if (!std::isfinite(d) || d > hi || d < lo || (lo_open && d == lo)) {
        return bad(key, fmt::format("{} is outside {}{}, {}]", d, lo_open ? "(" : "[", lo, hi));
    }
    // An open bound holds for the float the sampler gets too: 1e-50 is above 0, its float is not.
    const float f = static_cast<float>(d);
    if (lo_open && f == static_cast<float>(lo)) {
        return bad(key, fmt::format("{} is outside ({}, {}] in single precision", d, lo, hi));
    }
    *out = f;
    return {};
}

Status read_int(const JsonValue& root, std::string_view key, std::int64_t lo, std::int64_t hi,
                std::optional<int>* out) {
    const JsonValue* v = root.find(key);
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_integer()) return bad(key, fmt::format("must be an integer, not {}", type_of(*v)));
    if (v->as_int() < lo || v->as_int() > hi) {
        return bad(key, fmt::format("{} is outside [{}, {}]", v->as_int(), lo, hi));
    }
    *out = static_cast<int>(v->as_int());
    return {};
}

Status read_bool(const JsonValue& root, std::string_view key, bool* out) {
    const JsonValue* v = root.find(key);
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_bool()) return bad(key, fmt::format("must be true or false, not {}", type_of(*v)));
    *out = v->as_bool();
    return {};
}

// What a data: URI of an image_url (video_url) part may declare: image/* (video/* or an
// animated image/gif), or nothing more specific than bytes.
bool data_type_fits(std::string_view type, bool video) {
    if (type.empty() || type.starts_with("application/octet-stream")) return true;
    return video ? type.starts_with("video/") || type.starts_with("image/gif")
                 : type.starts_with("image/");
}

// The one reader of media parts: {"type": "image_url", "image_url": {"url"}} or the same with
// video_url; the URL a base64 data: URI, a file:// URL (--allowed-media-dir) or an http(s) URL
// of an allowed host.
Status parse_media_url(const JsonValue& part, const std::string& where, const ParseLimits& limits,
                       bool video, ImageRef* out) {
    const std::string key = video ? "video_url" : "image_url";
    const char* medium = video ? "video" : "image";
    const JsonValue* iu = part.find(key);
    if (iu == nullptr) {
        return bad(where, fmt::format("{0} {1} part needs \"{1}\": {{\"url\": ...}}",
                                      video ? "a" : "an", key));
    }
    const JsonValue* url = iu->is_string() ? iu : iu->find("url");
    if (url == nullptr || !url->is_string())
        return bad(where + "." + key, "needs \"url\", a string");
    const std::string_view u = url->as_string();
    const std::string url_where = where + "." + key + ".url";
    out->where = where;
    if (u.starts_with("data:")) {
        const std::size_t comma = u.find(',');
        if (comma == std::string_view::npos) return bad(url_where, "data: URI without a comma");
        const std::string_view header = u.substr(5, comma - 5);
        if (!header.ends_with(";base64")) {
            return bad(url_where, fmt::format("only base64 data: URIs are accepted "
                                              "(data:{}/...;base64,...)",
                                              medium));
        }
        const std::string_view type = header.substr(0, header.size() - 7);
        if (!data_type_fits(type, video)) {
            return bad(url_where, fmt::format("data: URI of type '{}' is not an {}", type,
                                              video ? "MP4, WebM or GIF video" : "image"));
        }
        Result<std::vector<std::uint8_t>> bytes = decode_base64(u.substr(comma + 1));
        if (!bytes.ok()) return bad(url_where, bytes.status().message());
        if (bytes.value().empty()) return bad(url_where, fmt::format("the {} is empty", medium));
        out->bytes = std::move(bytes).value();
        return {};
    }
    if (u.starts_with("file://")) {
        if (!limits.allow_file_urls) {
            return bad(url_where, fmt::format("file:// URLs are refused (the server was not "
                                              "started with --allowed-media-dir); send the {} as a "
                                              "data: URI",
                                              medium));
        }
        std::string_view path = u.substr(7);
        if (path.starts_with("localhost/")) path.remove_prefix(9);
        if (!path.starts_with("/")) return bad(url_where, "a file:// URL needs an absolute path");
        out->file_path = std::string(path);
        return {};
    }
    if (u.starts_with("http://") || u.starts_with("https://")) {
        const std::string host = url_host(u);
        const auto& hosts = limits.allowed_media_hosts;
        if (hosts.empty()) {
            return bad(url_where, fmt::format("http(s) {0} URLs are refused (the server was not "
                                              "started with --allowed-media-hosts); send the {0} "
                                              "as a data:{0}/...;base64 URI",
                                              medium));
        }
        if (host.empty() || std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
            return bad(url_where, fmt::format("host '{}' is not in --allowed-media-hosts", host));
        }
        out->remote_url = std::string(u);
        return {};
    }
    return bad(url_where, fmt::format("expected a data:{}/...;base64 URI (or file:// under "
                                      "--allowed-media-dir)",
                                      medium));
}

Status parse_content(const JsonValue& content, const std::string& where, const ParseLimits& limits,
                     RequestMessage* msg, int* images) {
    if (content.is_null()) return {};
    if (content.is_string()) {
        // "" adds no part: the chat template tests an empty string as false, a list as true.
        if (content.as_string().empty()) return {};
        msg->parts.push_back({.kind = RequestPart::Kind::kText, .text = content.as_string()});
        return {};
    }
    if (!content.is_array()) {
        return bad(where,
                   fmt::format("must be a string or an array of parts, not {}", type_of(content)));
    }
    for (std::size_t i = 0; i < content.items().size(); ++i) {
        const JsonValue& part = content.items()[i];
        const std::string pw = fmt::format("{}[{}]", where, i);
        if (part.is_string()) {
            msg->parts.push_back({.kind = RequestPart::Kind::kText, .text = part.as_string()});
            continue;
        }
        const JsonValue* type = part.find("type");
        if (type == nullptr || !type->is_string()) {
            return bad(pw,
                       "a content part needs \"type\": \"text\", \"image_url\" or \"video_url\"");
        }
        const std::string& t = type->as_string();
        if (t == "text" || t == "input_text") {
            const JsonValue* text = part.find("text");
            if (text == nullptr || !text->is_string()) {
                return bad(pw, "a text part needs \"text\", a string");
            }
            msg->parts.push_back({.kind = RequestPart::Kind::kText, .text = text->as_string()});
        } else if (t == "image_url" || t == "video_url") {
            const bool video = t == "video_url";
            if (msg->role != "user") {
                return bad(pw, fmt::format("{} are only allowed in user messages, not {}",
                                           video ? "videos" : "images", msg->role));
            }
            if (++*images > limits.max_images) {
                return bad(pw, fmt::format("more than {} images and videos in one request",
                                           limits.max_images));
            }
            RequestPart p{.kind = video ? RequestPart::Kind::kVideo : RequestPart::Kind::kImage};
            APP_TRY(parse_media_url(part, pw, limits, video, &p.image));
            msg->parts.push_back(std::move(p));
        } else {
            return bad(pw, fmt::format("unsupported part type '{}' (text, image_url and video_url "
                                       "are)",
                                       t));
        }
    }
    return {};
}

// An assistant's calls: [{"id", "type": "function", "function": {"name", "arguments"}}], the
// arguments a JSON string as OpenAI sends them (rendered verbatim, as the template does).
Status parse_tool_calls(const JsonValue& calls, const std::string& where, RequestMessage* msg) {
    if (calls.is_null()) return {};
    if (!calls.is_array()) return bad(where, "must be an array of tool calls");
    if (!calls.items().empty() && msg->role != "assistant") {
        return bad(where, "only assistant messages carry tool_calls");
    }
    for (std::size_t k = 0; k < calls.items().size(); ++k) {
        const JsonValue& c = calls.items()[k];
        const std::string cw = fmt::format("{}[{}]", where, k);
        const JsonValue* fn = c.find("function");
        const JsonValue* name = fn != nullptr ? fn->find("name") : nullptr;
        const JsonValue* args = fn != nullptr ? fn->find("arguments") : nullptr;
        if (name == nullptr || !name->is_string() || args == nullptr || !args->is_string()) {
            return bad(cw,
                       "a tool call needs \"function\": {\"name\": string, \"arguments\": "
                       "JSON string}");
        }
        ToolCall call{.name = name->as_string()};
        if (const JsonValue* id = c.find("id"); id != nullptr && id->is_string()) {
            call.id = id->as_string();
        }
        call.arguments = args->as_string();
        msg->tool_calls.push_back(std::move(call));
    }
    return {};
}

Status parse_message_list(const JsonValue& root, const ParseLimits& limits,
                          std::vector<RequestMessage>* out, int* image_count) {
    const JsonValue* messages = root.find("messages");
    if (messages == nullptr) return bad("body", "\"messages\" is missing");
    if (!messages->is_array()) {
        return bad("messages", fmt::format("must be an array, not {}", type_of(*messages)));
    }
    if (messages->items().empty()) return bad("messages", "is empty");
    for (std::size_t i = 0; i < messages->items().size(); ++i) {
        const JsonValue& m = messages->items()[i];
        const std::string where = fmt::format("messages[{}]", i);
        if (!m.is_object()) return bad(where, fmt::format("must be an object, not {}", type_of(m)));
        const JsonValue* role = m.find("role");
        if (role == nullptr || !role->is_string()) {
            return bad(where, "needs \"role\": system, user or assistant");
        }
        RequestMessage msg{.role = role->as_string()};
        if (msg.role == "developer") msg.role = "system";
        if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" &&
            msg.role != "tool") {
            return bad(where + ".role",
                       fmt::format("'{}' is not supported (system, user, assistant, tool are)",
                                   role->as_string()));
        }
        if (msg.role == "system" && i != 0) {
            return bad(where, "a system message must come first");
        }
        if (const JsonValue* calls = m.find("tool_calls")) {
            APP_TRY(parse_tool_calls(*calls, where + ".tool_calls", &msg));
        }
        const JsonValue* content = m.find("content");
        if (content == nullptr && msg.tool_calls.empty()) return bad(where, "needs \"content\"");
        if (content != nullptr) {
            APP_TRY(parse_content(*content, where + ".content", limits, &msg, image_count));
        }
        out->push_back(std::move(msg));
    }
    return {};
}

Status parse_messages(const JsonValue& root, const ParseLimits& limits, ChatRequest* out) {
    return parse_message_list(root, limits, &out->messages, &out->image_count);
}

Status parse_tools(const JsonValue& root, Tools* out) {
    const JsonValue* tools = root.find("tools");
    const JsonValue* choice = root.find("tool_choice");
    const JsonValue* parallel = root.find("parallel_tool_calls");
    static const JsonValue kNone;
    Result<Tools> parsed = Tools::parse(tools != nullptr ? *tools : kNone, choice, parallel);
    if (!parsed.ok()) return Status(ErrorCode::kInvalidArgument, parsed.status().message());
    *out = std::move(parsed).value();
    return {};
}

// tool_choice "required" or a named function constrains the answer, as response_format does:
// both at once cannot hold. "auto" constrains calls once one opens, "none" bans the opener: beside
// a response_format the answer follows the format (whose grammar cannot open a call).
Status tool_constraint(ChatRequest* out) {
    Result<OutputConstraint> c = out->tools.constraint();
    if (!c.ok()) return Status(ErrorCode::kInvalidArgument, c.status().message());
    if (c.value().empty()) return {};
    if (!out->constraint.empty()) {
        if (c.value().triggered() || !out->tools.calls_allowed()) return {};
        return bad("tool_choice",
                   "a required or named tool call and a response_format cannot both constrain "
                   "the answer");
    }
    out->constraint = std::move(c).value();
    return {};
}

Status parse_stop(const JsonValue& root, const ParseLimits& limits, ChatRequest* out) {
    const JsonValue* stop = root.find("stop");
    if (stop == nullptr || stop->is_null()) return {};
    std::vector<const JsonValue*> items;
    if (stop->is_string()) {
        items.push_back(stop);
    } else if (stop->is_array()) {
        for (const JsonValue& s : stop->items()) items.push_back(&s);
    } else {
        return bad("stop",
                   fmt::format("must be a string or an array of strings, not {}", type_of(*stop)));
    }
    if (int(items.size()) > limits.max_stop) {
        return bad("stop", fmt::format("{} strings; at most {}", items.size(), limits.max_stop));
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string where = stop->is_array() ? fmt::format("stop[{}]", i) : "stop";
        if (!items[i]->is_string()) return bad(where, "must be a string");
        const std::string& s = items[i]->as_string();
        if (s.empty()) return bad(where, "is empty");
        if (s.size() > limits.max_stop_bytes) {
            return bad(where, fmt::format("{} bytes; at most {}", s.size(), limits.max_stop_bytes));
        }
        out->stop.push_back(s);
    }
    return {};
}

Status parse_sampling(const JsonValue& root, const ParseLimits& limits, ChatRequest* out) {
    std::optional<int> max_tokens, max_completion_tokens;
    APP_TRY(read_int(root, "max_tokens", 1, limits.max_tokens_limit, &max_tokens));
    APP_TRY(read_int(root, "max_completion_tokens", 1, limits.max_tokens_limit,
                     &max_completion_tokens));
    out->max_tokens = max_completion_tokens ? max_completion_tokens : max_tokens;
    APP_TRY(read_float(root, "temperature", 0.0, 100.0, false, &out->temperature));
    APP_TRY(read_float(root, "top_p", 0.0, 1.0, true, &out->top_p));
    APP_TRY(read_int(root, "top_k", 0, 1 << 30, &out->top_k));
    APP_TRY(read_float(root, "presence_penalty", -2.0, 2.0, false, &out->presence_penalty));
    APP_TRY(read_float(root, "frequency_penalty", -2.0, 2.0, false, &out->frequency_penalty));
    APP_TRY(read_float(root, "repetition_penalty", 0.0, 100.0, true, &out->repetition_penalty));
    if (const JsonValue* seed = root.find("seed"); seed != nullptr && !seed->is_null()) {
        if (!seed->is_integer()) {
            return bad("seed", fmt::format("must be an integer, not {}", type_of(*seed)));
        }
        out->seed = static_cast<std::uint64_t>(seed->as_int());
    }
    return parse_stop(root, limits, out);
}

// logit_bias: {"<token id>": bias, ...}, as OpenAI sends it (ids as object keys).
Status parse_logit_bias(const JsonValue& root, const ParseLimits& limits, ChatRequest* out) {
    const JsonValue* lb = root.find("logit_bias");
    if (lb == nullptr || lb->is_null()) return {};
    if (!lb->is_object()) {
        return bad("logit_bias", fmt::format("must be an object mapping token ids to biases, not "
                                             "{}",
                                             type_of(*lb)));
    }
    for (const auto& [key, value] : lb->members()) {
        const std::string where = fmt::format("logit_bias[\"{}\"]", key);
        std::int64_t id = -1;
        const auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (key.empty() || ec != std::errc() || ptr != key.data() + key.size() || id < 0) {
            return bad(where, "the key must be a token id (a non-negative integer)");
        }
        if (limits.vocab_size > 0 && id >= limits.vocab_size) {
            return bad(where, fmt::format("token id {} is outside the vocabulary of {} ids", id,
                                          limits.vocab_size));
        }
        if (!value.is_number() || !(value.as_double() >= -100.0 && value.as_double() <= 100.0)) {
            return bad(where, "the bias must be a number in [-100, 100]");
        }
        out->logit_bias.emplace_back(std::int32_t(id), float(value.as_double()));
    }
    return {};
}

Status parse_choices(const JsonValue& root, const ParseLimits& limits, ChatRequest* out) {
    std::optional<int> n;
    const JsonValue* nv = root.find("n");
    if (limits.max_n == 1 && nv != nullptr && nv->is_integer() && nv->as_int() > 1) {
        return bad(
            "n", fmt::format("{} choices: this server gives one choice per request", nv->as_int()));
    }
    APP_TRY(read_int(root, "n", 1, limits.max_n, &n));
    out->n = n.value_or(1);
    bool logprobs = false;
    APP_TRY(read_bool(root, "logprobs", &logprobs));
    std::optional<int> top;
    APP_TRY(read_int(root, "top_logprobs", 0, kMaxLogprobs, &top));
    if (top && !logprobs) return bad("top_logprobs", "needs \"logprobs\": true");
    out->top_logprobs = logprobs ? top.value_or(0) : -1;
    return parse_logit_bias(root, limits, out);
}

// Every top-level key the server reads; anything else is refused by check_fields.
constexpr std::array<std::string_view, 25> kKnownFields = {"messages",
                                                           "model",
                                                           "max_tokens",
                                                           "max_completion_tokens",
                                                           "temperature",
                                                           "top_p",
                                                           "top_k",
                                                           "seed",
                                                           "stop",
                                                           "presence_penalty",
                                                           "frequency_penalty",
                                                           "repetition_penalty",
                                                           "logit_bias",
                                                           "n",
                                                           "logprobs",
                                                           "top_logprobs",
                                                           "stream",
                                                           "stream_options",
                                                           "ignore_eos",
                                                           "user",
                                                           "metadata",
                                                           "response_format",
                                                           "tools",
                                                           "tool_choice",
                                                           "parallel_tool_calls"};

Status check_fields(const JsonValue& root) {
    for (const auto& [key, value] : root.members()) {
        if (value.is_null()) continue;
        if (std::find(kKnownFields.begin(), kKnownFields.end(), key) == kKnownFields.end()) {
            return bad(key,
                       "this field is not implemented by the server (refused rather than "
                       "ignored)");
        }
    }
    if (const JsonValue* so = root.find("stream_options"); so != nullptr && so->is_object()) {
        for (const auto& [key, value] : so->members()) {
            if (key != "include_usage" && !value.is_null()) {
                return bad("stream_options." + key, "is not implemented by the server");
            }
        }
    }
    return {};
}

}  // namespace

std::string url_host(std::string_view url) {
    std::string_view rest;
    if (url.starts_with("http://")) {
        rest = url.substr(7);
    } else if (url.starts_with("https://")) {
        rest = url.substr(8);
    } else {
        return {};
    }
    rest = rest.substr(0, rest.find_first_of("/?#"));
    if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
        rest.remove_prefix(at + 1);
    }
    if (rest.starts_with("[")) {
        rest = rest.substr(0, rest.find(']') == std::string_view::npos ? 0 : rest.find(']') + 1);
    } else {
        rest = rest.substr(0, rest.find(':'));
    }
    std::string host(rest);
    std::transform(host.begin(), host.end(), host.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return host;
}

namespace {

// A request body: a JSON object, or a 400 saying what it is instead.
Result<JsonValue> parse_body(std::string_view body) {
    Result<JsonValue> parsed = parse_json(body, "request body");
    if (!parsed.ok()) {
        return Status(ErrorCode::kInvalidArgument,
                      fmt::format("malformed JSON: {}", parsed.status().message()));
    }
    if (!parsed->is_object()) {
        return bad("body", fmt::format("must be a JSON object, not {}", type_of(parsed.value())));
    }
    return parsed;
}

}  // namespace

Result<ChatRequest> parse_chat_request(std::string_view body, const ParseLimits& limits) {
    Result<JsonValue> parsed = parse_body(body);
    if (!parsed.ok()) return parsed.status();
    const JsonValue& root = parsed.value();
    APP_TRY(check_fields(root));
    ChatRequest out;
    if (const JsonValue* model = root.find("model"); model != nullptr && !model->is_null()) {
        if (!model->is_string()) return bad("model", "must be a string");
        out.model = model->as_string();
    }
    APP_TRY(parse_messages(root, limits, &out));
    APP_TRY(parse_sampling(root, limits, &out));
    APP_TRY(parse_choices(root, limits, &out));
    APP_TRY(parse_response_format(root, &out.constraint));
    APP_TRY(parse_tools(root, &out.tools));
    APP_TRY(tool_constraint(&out));
    APP_TRY(read_bool(root, "stream", &out.stream));
    APP_TRY(read_bool(root, "ignore_eos", &out.ignore_eos));
    if (const JsonValue* so = root.find("stream_options"); so != nullptr && !so->is_null()) {
        if (!so->is_object()) return bad("stream_options", "must be an object");
        APP_TRY(read_bool(*so, "include_usage", &out.include_usage));
    }
    return out;
}

Result<TokenizeRequest> parse_tokenize_request(std::string_view body, const ParseLimits& limits) {
    Result<JsonValue> parsed = parse_body(body);
    if (!parsed.ok()) return parsed.status();
    const JsonValue& root = parsed.value();
    static constexpr std::array<std::string_view, 7> kFields = {"prompt",
                                                                "messages",
                                                                "tools",
                                                                "tool_choice",
                                                                "parallel_tool_calls",
                                                                "add_generation_prompt",
                                                                "model"};
    for (const auto& [key, value] : root.members()) {
        if (!value.is_null() && std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
            return bad(key,
                       "is not a /tokenize field (prompt, messages, tools, "
                       "add_generation_prompt are)");
        }
    }
    TokenizeRequest out;
    const JsonValue* prompt = root.find("prompt");
    const JsonValue* messages = root.find("messages");
    if ((prompt == nullptr) == (messages == nullptr)) {
        return bad("body", "give either \"prompt\" (a string) or \"messages\"");
    }
    if (prompt != nullptr) {
        if (!prompt->is_string()) return bad("prompt", "must be a string");
        if (root.find("tools") != nullptr) return bad("tools", "go with \"messages\"");
        out.raw = true;
        out.prompt = prompt->as_string();
        return out;
    }
    APP_TRY(parse_message_list(root, limits, &out.messages, &out.image_count));
    APP_TRY(parse_tools(root, &out.tools));
    APP_TRY(read_bool(root, "add_generation_prompt", &out.add_generation_prompt));
    return out;
}

}  // namespace qvl::serve
