#include "grammar/tool_grammar.h"

#include <fmt/format.h>

#include "grammar/json_schema.h"
#include "io/json_write.h"

namespace qvl::grammar {

namespace {

// A function without parameters takes an empty argument list (OpenAI), i.e. the object {}.
const io::JsonValue& empty_parameters() {
    static const io::JsonValue v = [] {
        auto r =
            io::parse_json(R"({"type": "object", "properties": {}, "additionalProperties": false})",
                           "empty parameters");
        return r.ok() ? std::move(r).value() : io::JsonValue();
    }();
    return v;
}

// Rules for one function: `rule` ::= the name's JSON string, the arguments key and its schema.
base::Result<std::string> function_rules(const text::ChatTool& tool, std::size_t index,
                                         const std::string& rule) {
    const io::JsonValue& schema = tool.parameters.is_null() ? empty_parameters() : tool.parameters;
    auto args = json_schema_rules(schema, rule + "-args");
    if (!args.ok()) {
        return base::Status(args.status().code(),
                            fmt::format("tools[{}] ('{}') parameters: {}", index, tool.name,
                                        args.status().message()));
    }
    return fmt::format("{} ::= {} {}-args\n{}", rule,
                       gbnf_literal(io::json_quote(tool.name) + ", \"arguments\": "), rule,
                       args.value());
}

}  // namespace

base::Result<std::string> tool_call_gbnf(std::span<const text::ChatTool> tools,
                                         const text::ToolChoice& choice) {
    using Mode = text::ToolChoice::Mode;
    if (choice.mode == Mode::kNone) return std::string();
    std::string alternatives;
    std::string rules;
    for (std::size_t i = 0; i < tools.size(); ++i) {
        if (choice.mode == Mode::kNamed && tools[i].name != choice.name) continue;
        const std::string rule = fmt::format("fn{}", i);
        QVL_ASSIGN_OR_RETURN(std::string r, function_rules(tools[i], i, rule));
        rules += r;
        alternatives += (alternatives.empty() ? "" : " | ") + rule;
    }
    if (alternatives.empty()) {
        return base::Status(base::ErrorCode::kInvalidArgument,
                            choice.mode == Mode::kNamed
                                ? fmt::format("tool_choice: the function '{}' is not among the "
                                              "tools",
                                              choice.name)
                                : fmt::format("tool_choice \"{}\" needs at least one tool",
                                              choice.mode == Mode::kAuto ? "auto" : "required"));
    }
    const bool many = choice.mode != Mode::kNamed && choice.parallel;
    return fmt::format(
        "root ::= tool-call{}\n"
        "tool-call ::= \"<tool_call>\\n{{\\\"name\\\": \" ( {} ) \"}}\\n</tool_call>\"\n{}{}",
        many ? " ( \"\\n\" tool-call )*" : "", alternatives, rules, json_primitive_rules());
}

}  // namespace qvl::grammar
