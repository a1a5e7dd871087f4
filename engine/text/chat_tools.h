// The tools of a chat request (OpenAI's format, which Hugging Face chat templates take as is):
// `tools` = [{"type": "function", "function": {"name", "description", "parameters"}}, ...] and
// `tool_choice` = "auto" | "none" | "required" | {"type": "function", "function": {"name"}}.
// The chat template writes each tool object whole with `tojson` (text/py_json.h), so a tool
// keeps the JSON text it is rendered with next to the parts the grammar and the parser need.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/json.h"

namespace qvl::text {

struct ChatTool {
    std::string name;
    io::JsonValue parameters;  // the function's JSON schema; null when the tool has none
    std::string json;          // the whole tool object as the template's tojson writes it
};

// `label` names the field in errors ("tools"). kInvalidArgument, naming the element, for:
// a non-array, an element that is not {"type": "function", "function": {...}}, a missing or
// empty name, a name given twice, parameters that are not an object or a boolean.
base::Result<std::vector<ChatTool>> parse_tools(const io::JsonValue& tools,
                                                std::string_view label = "tools");

struct ToolChoice {
    enum class Mode { kAuto, kNone, kRequired, kNamed };
    Mode mode = Mode::kAuto;
    std::string name;       // kNamed: the function that must be called
    bool parallel = true;   // parallel_tool_calls: false allows at most one call
};

// tool_choice (nullptr: absent) and parallel_tool_calls (nullptr: absent) against the tools.
// Absent means "auto" when there are tools, as OpenAI says. kInvalidArgument for an unknown
// string, a named function that is not among the tools, "required" or a named function with no
// tools, a malformed object, a non-boolean parallel_tool_calls.
base::Result<ToolChoice> parse_tool_choice(const io::JsonValue* choice,
                                           const io::JsonValue* parallel,
                                           std::span<const ChatTool> tools);

// A fresh tool call id: "call_" and 24 random letters and digits, as OpenAI's look.
std::string new_tool_call_id();

}  // namespace qvl::text
