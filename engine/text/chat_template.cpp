#include "text/chat_template.h"

#include <string_view>
#include <utility>

#include "io/json.h"
#include "text/py_json.h"

namespace qvl::text {

using base::ErrorCode;

namespace {

constexpr std::string_view kImageBlock = "<|vision_start|><|image_pad|><|vision_end|>";
constexpr std::string_view kVideoBlock = "<|vision_start|><|video_pad|><|vision_end|>";

// The template's tools preamble, around one line per tool (its text, verbatim).
constexpr std::string_view kToolsHead =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsTail =
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
    "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

void append_text_parts(std::string& out, const ChatMessage& m) {
    for (const ChatPart& p : m.parts) {
        if (p.kind == ChatPart::Kind::kText) out += p.text;
    }
}

void append_system(std::string& out, std::span<const ChatMessage> messages,
                   std::span<const ChatTool> tools) {
    const bool has_system = !messages.empty() && messages[0].role == "system";
    if (tools.empty()) {
        if (!has_system) return;
        out += "<|im_start|>system\n";
        append_text_parts(out, messages[0]);
        out += "<|im_end|>\n";
        return;
    }
    out += "<|im_start|>system\n";
    if (has_system) {
        append_text_parts(out, messages[0]);
        out += "\n\n";
    }
    out += kToolsHead;
    for (const ChatTool& t : tools) {
        out += '\n';
        out += t.json;
    }
    out += kToolsTail;
}

// Jinja's truth of message.content: a non-empty string or list. An empty string content has no
// parts (see MessagesParser::message), so a list holding one empty text item stays true.
bool has_content(const ChatMessage& m) { return !m.parts.empty(); }

void append_assistant(std::string& out, const ChatMessage& m) {
    out += "<|im_start|>assistant\n";
    append_text_parts(out, m);
    for (std::size_t i = 0; i < m.tool_calls.size(); ++i) {
        if (i > 0 || has_content(m)) out += '\n';
        out += "<tool_call>\n{\"name\": \"";
        out += m.tool_calls[i].name;
        out += "\", \"arguments\": ";
        out += m.tool_calls[i].arguments;
        out += "}\n</tool_call>";
    }
    out += "<|im_end|>\n";
}

}  // namespace

// Mirrors chat_template.json of Qwen3-VL-2B-Instruct with add_vision_id=false.
std::string render_chat(std::span<const ChatMessage> messages, bool add_generation_prompt,
                        std::span<const ChatTool> tools) {
    std::string out;
    append_system(out, messages, tools);
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user") {
            out += "<|im_start|>user\n";
            for (const ChatPart& p : m.parts) {
                out += p.kind == ChatPart::Kind::kImage   ? kImageBlock
                       : p.kind == ChatPart::Kind::kVideo ? kVideoBlock
                                                          : std::string_view(p.text);
            }
            out += "<|im_end|>\n";
        } else if (m.role == "assistant") {
            append_assistant(out, m);
        } else if (m.role == "tool") {
            if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
            out += "\n<tool_response>\n";
            append_text_parts(out, m);
            out += "\n</tool_response>";
            if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
        }
    }
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

namespace {

class MessagesParser {
  public:
    explicit MessagesParser(const std::filesystem::path& path)
        : file_(path.string()), dir_(path.parent_path()) {}
    MessagesParser(std::string label, std::filesystem::path dir)
        : file_(std::move(label)), dir_(std::move(dir)) {}

    template <class... Args>
    base::Status fail(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) const {
        return base::Status(code, file_ + ": " + fmt::format(f, std::forward<Args>(args)...));
    }

    base::Result<std::vector<ChatMessage>> parse(const io::JsonValue& root) const {
        const io::JsonValue* list = &root;
        if (root.is_object()) list = root.find("messages");
        if (list == nullptr || !list->is_array()) {
            return fail(ErrorCode::kInvalidArgument,
                        "expected an array of messages or an object with a \"messages\" array");
        }
        if (list->items().empty()) return fail(ErrorCode::kInvalidArgument, "no messages");
        std::vector<ChatMessage> messages;
        for (std::size_t i = 0; i < list->items().size(); ++i) {
            QVL_ASSIGN_OR_RETURN(ChatMessage m, message(list->items()[i], i));
            messages.push_back(std::move(m));
        }
        return messages;
    }

  private:
    base::Result<ChatMessage> message(const io::JsonValue& v, std::size_t i) const {
        if (!v.is_object()) {
            return fail(ErrorCode::kInvalidArgument, "messages[{}]: not an object", i);
        }
        const io::JsonValue* role = v.find("role");
        if (role == nullptr || !role->is_string()) {
            return fail(ErrorCode::kInvalidArgument, "messages[{}]: no \"role\" string", i);
        }
        ChatMessage m;
        m.role = role->as_string();
        if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
            return fail(ErrorCode::kInvalidArgument,
                        "messages[{}]: role \"{}\" is not system, user, assistant or tool", i,
                        m.role);
        }
        if (m.role == "system" && i != 0) {
            // The template renders only a leading system message and drops the others.
            return fail(ErrorCode::kInvalidArgument,
                        "messages[{}]: a system message must be the first message", i);
        }
        if (const io::JsonValue* calls = v.find("tool_calls"); calls != nullptr) {
            QVL_ASSIGN_OR_RETURN(m.tool_calls, tool_calls(*calls, m.role, i));
        }
        const io::JsonValue* content = v.find("content");
        if (content != nullptr && content->is_string()) {
            // "" adds no part: it renders as nothing and is false in the template's tests.
            if (!content->as_string().empty()) {
                m.parts.push_back({ChatPart::Kind::kText, content->as_string(), {}});
            }
            return m;
        }
        if ((content == nullptr || content->is_null()) && !m.tool_calls.empty()) return m;
        if (content == nullptr || !content->is_array()) {
            return fail(ErrorCode::kInvalidArgument,
                        "messages[{}].content: expected a string or an array of items", i);
        }
        for (std::size_t j = 0; j < content->items().size(); ++j) {
            QVL_ASSIGN_OR_RETURN(ChatPart p, item(content->items()[j], i, j));
            if (p.kind != ChatPart::Kind::kText && m.role != "user") {
                return fail(ErrorCode::kInvalidArgument,
                            "messages[{}].content[{}]: {} are only allowed in user messages (the "
                            "chat template drops them elsewhere)",
                            i, j, p.kind == ChatPart::Kind::kImage ? "images" : "videos");
            }
            m.parts.push_back(std::move(p));
        }
        return m;
    }

    // An assistant's calls in OpenAI's form ({"id", "type": "function", "function": {"name",
    // "arguments"}}) or the bare {"name", "arguments"} the template also takes.
    base::Result<std::vector<ChatToolCall>> tool_calls(const io::JsonValue& calls,
                                                       const std::string& role,
                                                       std::size_t i) const {
        std::vector<ChatToolCall> out;
        if (calls.is_null()) return out;
        if (!calls.is_array()) {
            return fail(ErrorCode::kInvalidArgument, "messages[{}].tool_calls: not an array", i);
        }
        if (!calls.items().empty() && role != "assistant") {
            return fail(ErrorCode::kInvalidArgument,
                        "messages[{}]: only assistant messages carry tool_calls", i);
        }
        for (std::size_t k = 0; k < calls.items().size(); ++k) {
            const io::JsonValue& c = calls.items()[k];
            const io::JsonValue* fn = c.find("function");
            if (fn == nullptr) fn = &c;
            const io::JsonValue* name = fn->find("name");
            const io::JsonValue* args = fn->find("arguments");
            if (name == nullptr || !name->is_string() || args == nullptr) {
                return fail(ErrorCode::kInvalidArgument,
                            "messages[{}].tool_calls[{}]: expected a function with a \"name\" "
                            "string and \"arguments\"",
                            i, k);
            }
            ChatToolCall call;
            if (const io::JsonValue* id = c.find("id"); id != nullptr && id->is_string()) {
                call.id = id->as_string();
            }
            call.name = name->as_string();
            call.arguments = args->is_string() ? args->as_string() : python_json(*args);
            out.push_back(std::move(call));
        }
        return out;
    }

    // Same precedence as the template: image, then video, then text.
    base::Result<ChatPart> item(const io::JsonValue& v, std::size_t i, std::size_t j) const {
        if (!v.is_object()) {
            return fail(ErrorCode::kInvalidArgument, "messages[{}].content[{}]: not an object", i,
                        j);
        }
        const io::JsonValue* type = v.find("type");
        // Both arms must be string_views: with a const char* arm the conditional's type is a
        // temporary std::string and the view would dangle.
        const std::string_view t =
            type && type->is_string() ? std::string_view(type->as_string()) : std::string_view();
        if (t == "image" || v.find("image") || v.find("image_url")) {
            return media_part(v, "image", ChatPart::Kind::kImage, i, j);
        }
        if (t == "video" || v.find("video") || v.find("video_url")) {
            return media_part(v, "video", ChatPart::Kind::kVideo, i, j);
        }
        if (const io::JsonValue* text = v.find("text")) {
            if (!text->is_string()) {
                return fail(ErrorCode::kInvalidArgument,
                            "messages[{}].content[{}].text: not a string", i, j);
            }
            return ChatPart{ChatPart::Kind::kText, text->as_string(), {}};
        }
        return fail(ErrorCode::kInvalidArgument,
                    "messages[{}].content[{}]: neither an image, a video nor a text item", i, j);
    }

    // An image or video item: its path under `key`, `key`_url (a string or {"url"}), "url" or
    // "path", in that order.
    base::Result<ChatPart> media_part(const io::JsonValue& v, const std::string& key,
                                      ChatPart::Kind kind, std::size_t i, std::size_t j) const {
        const io::JsonValue* src = v.find(key);
        if (src == nullptr) src = v.find(key + "_url");
        if (src != nullptr && src->is_object()) src = src->find("url");
        if (src == nullptr) src = v.find("url");
        if (src == nullptr) src = v.find("path");
        if (src == nullptr || !src->is_string() || src->as_string().empty()) {
            return fail(ErrorCode::kInvalidArgument,
                        "messages[{}].content[{}]: {} item without a path string", i, j, key);
        }
        std::string_view path = src->as_string();
        if (path.starts_with("file://")) path.remove_prefix(7);
        if (path.starts_with("http://") || path.starts_with("https://") ||
            path.starts_with("data:")) {
            return fail(ErrorCode::kUnsupported,
                        "messages[{}].content[{}]: only local {} files are supported, got '{}'", i,
                        j, key, path.substr(0, 64));
        }
        std::filesystem::path p(path);
        if (p.is_relative() && !dir_.empty()) p = (dir_ / p).lexically_normal();
        return ChatPart{.kind = kind, .image_path = p.string()};
    }

    std::string file_;
    std::filesystem::path dir_;
};

}  // namespace

base::Result<std::vector<ChatMessage>> load_messages_file(const std::filesystem::path& path) {
    QVL_ASSIGN_OR_RETURN(const io::JsonValue root, io::read_json_file(path));
    return MessagesParser(path).parse(root);
}

base::Result<std::vector<ChatMessage>> parse_messages(const io::JsonValue& messages,
                                                      const std::string& label,
                                                      const std::filesystem::path& image_dir) {
    return MessagesParser(label, image_dir).parse(messages);
}

base::Result<std::vector<std::int32_t>> expand_image_pads(std::span<const std::int32_t> ids,
                                                          std::int32_t image_pad_id,
                                                          std::span<const int> image_tokens) {
    std::size_t n_pads = 0;
    std::size_t total = ids.size();
    for (const std::int32_t id : ids) n_pads += id == image_pad_id ? 1 : 0;
    if (n_pads != image_tokens.size()) {
        return base::error(ErrorCode::kInvalidArgument,
                           "the prompt has {} image placeholders but {} images were given", n_pads,
                           image_tokens.size());
    }
    for (std::size_t k = 0; k < image_tokens.size(); ++k) {
        if (image_tokens[k] < 1) {
            return base::error(ErrorCode::kInvalidArgument, "image {} has {} tokens, expected >= 1",
                               k, image_tokens[k]);
        }
        total += std::size_t(image_tokens[k]) - 1;
    }
    std::vector<std::int32_t> out;
    out.reserve(total);
    std::size_t k = 0;
    for (const std::int32_t id : ids) {
        if (id == image_pad_id) {
            out.insert(out.end(), std::size_t(image_tokens[k++]), image_pad_id);
        } else {
            out.push_back(id);
        }
    }
    return out;
}

}  // namespace qvl::text
