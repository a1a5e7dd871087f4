// The grammar behind tool_choice "required" and a named function: the answer is one or more
// tool-call blocks exactly as the chat template writes them,
//   <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>
// joined by "\n", where NAME is one of the tools (or the named one) and ARGS follows that
// function's `parameters` schema (grammar/json_schema.h, so an unsupported schema keyword is an
// error naming the tool). A named function, or parallel_tool_calls false, allows exactly one
// block. "auto" and "none" constrain nothing (the answer is free text), so there is no grammar.
#pragma once

#include <span>
#include <string>

#include "base/status.h"
#include "text/chat_tools.h"

namespace qvl::grammar {

// GBNF text with a `root` rule; "" for kAuto and kNone.
base::Result<std::string> tool_call_gbnf(std::span<const text::ChatTool> tools,
                                         const text::ToolChoice& choice);

}  // namespace qvl::grammar
