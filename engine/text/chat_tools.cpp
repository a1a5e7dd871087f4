#include "text/chat_tools.h"

#include <fmt/format.h>

#include <random>
#include <set>

#include "text/py_json.h"

namespace qvl::text {

using base::ErrorCode;

namespace {

base::Result<ChatTool> parse_tool(const io::JsonValue& t, const std::string& at) {
    const auto fail = [&](std::string_view what) {
        return base::error(ErrorCode::kInvalidArgument, "{}: {}", at, what);
    };
    if (!t.is_object()) return fail("not an object");
    const io::JsonValue* type = t.find("type");
    if (type == nullptr || !type->is_string() || type->as_string() != "function") {
        return fail("\"type\" must be \"function\" (the only kind of tool)");
    }
    const io::JsonValue* fn = t.find("function");
    if (fn == nullptr || !fn->is_object()) return fail("no \"function\" object");
    const io::JsonValue* name = fn->find("name");
    if (name == nullptr || !name->is_string() || name->as_string().empty()) {
        return fail("function without a \"name\" string");
    }
    ChatTool tool;
    tool.name = name->as_string();
    if (const io::JsonValue* p = fn->find("parameters"); p != nullptr && !p->is_null()) {
        if (!p->is_object() && !p->is_bool()) return fail("\"parameters\" is not a JSON schema");
        tool.parameters = *p;
    }
    tool.json = python_json(t);
    return tool;
}

}  // namespace

base::Result<std::vector<ChatTool>> parse_tools(const io::JsonValue& tools,
                                                std::string_view label) {
    if (!tools.is_array()) {
        return base::error(ErrorCode::kInvalidArgument, "{}: expected an array of tools", label);
    }
    std::vector<ChatTool> out;
    std::set<std::string, std::less<>> names;
    for (std::size_t i = 0; i < tools.items().size(); ++i) {
        const std::string at = fmt::format("{}[{}]", label, i);
        QVL_ASSIGN_OR_RETURN(ChatTool tool, parse_tool(tools.items()[i], at));
        if (!names.insert(tool.name).second) {
            return base::error(ErrorCode::kInvalidArgument, "{}: the function name '{}' is given twice",
                               at, tool.name);
        }
        out.push_back(std::move(tool));
    }
    return out;
}

namespace {

base::Result<ToolChoice> parse_choice_value(const io::JsonValue& c,
                                            std::span<const ChatTool> tools) {
    ToolChoice out;
    if (c.is_string()) {
        const std::string& s = c.as_string();
        if (s == "auto") return out;
        if (s == "none") {
            out.mode = ToolChoice::Mode::kNone;
            return out;
        }
        if (s == "required") {
            out.mode = ToolChoice::Mode::kRequired;
            return out;
        }
        return base::error(ErrorCode::kInvalidArgument,
                           "tool_choice: \"{}\" is not \"auto\", \"none\", \"required\" or a "
                           "function",
                           s.substr(0, 64));
    }
    const io::JsonValue* type = c.find("type");
    const io::JsonValue* fn = c.find("function");
    const io::JsonValue* name = fn != nullptr ? fn->find("name") : nullptr;
    if (!c.is_object() || type == nullptr || !type->is_string() ||
        type->as_string() != "function" || name == nullptr || !name->is_string()) {
        return base::error(ErrorCode::kInvalidArgument,
                           "tool_choice: expected a string or {{\"type\": \"function\", "
                           "\"function\": {{\"name\": ...}}}}");
    }
    out.mode = ToolChoice::Mode::kNamed;
    out.name = name->as_string();
    for (const ChatTool& t : tools) {
        if (t.name == out.name) return out;
    }
    return base::error(ErrorCode::kInvalidArgument,
                       "tool_choice: the function '{}' is not among the tools", out.name);
}

}  // namespace

base::Result<ToolChoice> parse_tool_choice(const io::JsonValue* choice,
                                           const io::JsonValue* parallel,
                                           std::span<const ChatTool> tools) {
    ToolChoice out;
    if (choice != nullptr && !choice->is_null()) {
        QVL_ASSIGN_OR_RETURN(out, parse_choice_value(*choice, tools));
    }
    if ((out.mode == ToolChoice::Mode::kRequired || out.mode == ToolChoice::Mode::kNamed) &&
        tools.empty()) {
        return base::error(ErrorCode::kInvalidArgument,
                           "tool_choice asks for a tool call but no tools are given");
    }
    if (parallel != nullptr && !parallel->is_null()) {
        if (!parallel->is_bool()) {
            return base::error(ErrorCode::kInvalidArgument,
                               "parallel_tool_calls: expected true or false");
        }
        out.parallel = parallel->as_bool();
    }
    return out;
}

std::string new_tool_call_id() {
    static constexpr std::string_view kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uniform_int_distribution<std::size_t> pick(0, kAlphabet.size() - 1);
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += kAlphabet[pick(rng)];
    return id;
}

}  // namespace qvl::text
