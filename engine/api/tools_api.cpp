// qvl::Tools and qvl::ToolCallParser of the public header: the tools of text/chat_tools.h, the
// grammar of grammar/tool_grammar.h and the parser of text/tool_call_parser.h.
#include "api/convert.h"
#include "api/internals.h"
#include "grammar/tool_grammar.h"
#include "text/tool_call_parser.h"

namespace qvl {

Result<Tools> Tools::parse(const JsonValue& tools, const JsonValue* tool_choice,
                           const JsonValue* parallel_tool_calls) {
    auto impl = std::make_shared<Impl>();
    if (!tools.is_null()) {
        base::Result<std::vector<text::ChatTool>> parsed = text::parse_tools(tools);
        if (!parsed.ok()) return api::from_engine(parsed.status());
        impl->tools = std::move(parsed).value();
    }
    base::Result<text::ToolChoice> choice =
        text::parse_tool_choice(tool_choice, parallel_tool_calls, impl->tools);
    if (!choice.ok()) return api::from_engine(choice.status());
    impl->choice = std::move(choice).value();
    return Tools{.impl = std::move(impl)};
}

namespace {

bool no_tools(const Tools& t) { return t.impl == nullptr || t.impl->tools.empty(); }

// 1 when a function is named or parallel_tool_calls is false, else 0 (any number).
int max_calls(const Tools& t) {
    if (no_tools(t)) return 0;
    const text::ToolChoice& c = t.impl->choice;
    return c.mode == text::ToolChoice::Mode::kNamed || !c.parallel ? 1 : 0;
}

}  // namespace

bool Tools::calls_allowed() const {
    return !no_tools(*this) && impl->choice.mode != text::ToolChoice::Mode::kNone;
}

Result<OutputConstraint> Tools::constraint() const {
    if (no_tools(*this)) return OutputConstraint();
    if (impl->choice.mode == text::ToolChoice::Mode::kNone) {
        // The tools stay in the prompt, so the model may still try: it cannot open a call.
        return OutputConstraint(std::make_shared<const OutputConstraint::Impl>(
            OutputConstraint::Impl{.banned = "<tool_call>"}));
    }
    const bool automatic = impl->choice.mode == text::ToolChoice::Mode::kAuto;
    base::Result<std::string> gbnf = grammar::tool_call_gbnf(impl->tools, impl->choice);
    // Under "auto" nobody asked for a constraint: parameters the schema compiler does not
    // support leave calls unchecked, as before, instead of refusing the request.
    if (!gbnf.ok()) {
        if (automatic) return OutputConstraint();
        return api::from_engine(gbnf.status());
    }
    if (gbnf.value().empty()) return OutputConstraint();
    Result<OutputConstraint> calls = OutputConstraint::gbnf(gbnf.value());
    if (!calls.ok() || !automatic) return calls;
    // "auto": free text until the model opens a call, then valid calls only.
    auto lazy = std::make_shared<OutputConstraint::Impl>(*calls->impl());
    lazy->trigger = "<tool_call>";
    return OutputConstraint(std::move(lazy));
}

struct ToolCallParser::Impl {
    text::ToolCallParser parser;
    std::vector<ToolCall> calls;
    std::vector<text::ToolCallEvent> events;

    void convert(std::vector<Event>& out) {
        for (text::ToolCallEvent& e : events) {
            if (e.kind == text::ToolCallEvent::Kind::kCall) {
                const text::ParsedToolCall& c = parser.calls()[std::size_t(e.index)];
                calls.push_back({.id = c.id, .name = c.name, .arguments = c.arguments});
                out.push_back({.call = e.index});
            } else {
                out.push_back({.content = std::move(e.content)});
            }
        }
        events.clear();
    }
};

namespace {

std::vector<std::string> tool_names(const Tools& tools) {
    std::vector<std::string> names;
    if (tools.impl == nullptr) return names;
    for (const text::ChatTool& t : tools.impl->tools) names.push_back(t.name);
    return names;
}

}  // namespace

ToolCallParser::ToolCallParser(const Tools& tools)
    : impl_(std::make_shared<Impl>(
          Impl{.parser = text::ToolCallParser(tool_names(tools), max_calls(tools))})) {}

void ToolCallParser::push(std::string_view text, std::vector<Event>& out) {
    impl_->parser.push(text, impl_->events);
    impl_->convert(out);
}

void ToolCallParser::finish(std::vector<Event>& out) {
    impl_->parser.finish(impl_->events);
    impl_->convert(out);
}

const std::vector<ToolCall>& ToolCallParser::calls() const { return impl_->calls; }
const std::string& ToolCallParser::content() const { return impl_->parser.content(); }

}  // namespace qvl
