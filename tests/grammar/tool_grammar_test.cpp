// The tool_choice grammars on a byte vocabulary (plus the model's "<tool_call>" and
// "</tool_call>" tokens): what "required", a named function and parallel_tool_calls false
// accept, and random walks through the mask whose every answer the tool-call parser reads as
// valid calls only.
#include "grammar/tool_grammar.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "io/json.h"
#include "text/tool_call_parser.h"

namespace qvl::grammar {
namespace {

using text::ToolChoice;

constexpr std::int32_t kOpenTok = 256, kCloseTok = 257, kEnd = 258;

std::shared_ptr<const Vocab> vocab() {
    static const auto v = [] {
        std::vector<std::string> bytes;
        for (int b = 0; b < 256; ++b) bytes.emplace_back(1, char(b));
        bytes.emplace_back("<tool_call>");
        bytes.emplace_back("</tool_call>");
        bytes.emplace_back();  // the end token
        return std::make_shared<const Vocab>(bytes);
    }();
    return v;
}

std::vector<text::ChatTool> tools() {
    auto r = io::parse_json(R"([
      {"type": "function", "function": {"name": "get_weather", "description": "d",
        "parameters": {"type": "object", "properties": {
          "city": {"type": "string", "enum": ["Zürich", "東京", "Paris"]},
          "days": {"type": "integer", "minimum": 1, "maximum": 14},
          "note": {"type": "string", "maxLength": 3}},
          "required": ["city"], "additionalProperties": false}}},
      {"type": "function", "function": {"name": "now"}},
      {"type": "function", "function": {"name": "bad", "parameters": {"type": "string", "multipleOf": 2}}}
    ])",
                            "tools");
    EXPECT_TRUE(r.ok());
    auto t = text::parse_tools(r.value());
    EXPECT_TRUE(t.ok()) << t.status().message();
    auto out = std::move(t).value();
    return out;
}

Matcher matcher(const ToolChoice& choice, std::size_t n_tools = 2) {
    const auto all = tools();
    auto gbnf = tool_call_gbnf(std::span(all).first(n_tools), choice);
    EXPECT_TRUE(gbnf.ok()) << gbnf.status().message();
    auto g = parse_gbnf(gbnf.value());
    EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf.value();
    return Matcher(std::make_shared<const Grammar>(std::move(g).value()), vocab(), {kEnd});
}

bool accepts(const ToolChoice& choice, std::string_view text) {
    Matcher m = matcher(choice);
    return m.accept_bytes(text) && m.can_end();
}

std::string block(std::string_view name, std::string_view args) {
    return "<tool_call>\n{\"name\": \"" + std::string(name) +
           "\", \"arguments\": " + std::string(args) + "}\n</tool_call>";
}

const ToolChoice kRequired{ToolChoice::Mode::kRequired, "", true};
const ToolChoice kRequiredOne{ToolChoice::Mode::kRequired, "", false};
const ToolChoice kNamedNow{ToolChoice::Mode::kNamed, "now", true};

TEST(ToolGrammar, RequiredTakesOneOrMoreValidCalls) {
    const std::string w = block("get_weather", R"({"city": "Zürich", "days": 3})");
    const std::string n = block("now", "{}");
    EXPECT_TRUE(accepts(kRequired, w));
    EXPECT_TRUE(accepts(kRequired, w + "\n" + n + "\n" + w));
    EXPECT_TRUE(accepts(kRequired, block("get_weather", "{\"city\":\"東京\"}")));
    EXPECT_FALSE(accepts(kRequired, ""));
    EXPECT_FALSE(accepts(kRequired, "Sure. " + w));
    EXPECT_FALSE(accepts(kRequired, w + "\nDone."));
    EXPECT_FALSE(accepts(kRequired, block("get_time", "{}")));
    EXPECT_FALSE(accepts(kRequired, block("get_weather", R"({"days": 3})")));  // city required
    EXPECT_FALSE(accepts(kRequired, block("get_weather", R"({"city": "Rome"})")));
    EXPECT_FALSE(accepts(kRequired, block("get_weather", R"({"city": "Paris", "x": 1})")));
    EXPECT_FALSE(accepts(kRequired, block("get_weather", R"({"city": "Paris", "days": 15})")));
    EXPECT_FALSE(accepts(kRequired, block("now", R"({"a": 1})")));  // no parameters: {}
    EXPECT_FALSE(accepts(kRequiredOne, w + "\n" + n));
    EXPECT_TRUE(accepts(kRequiredOne, n));
}

TEST(ToolGrammar, NamedFunctionOnlyAndOnce) {
    EXPECT_TRUE(accepts(kNamedNow, block("now", "{ }")));
    EXPECT_FALSE(accepts(kNamedNow, block("get_weather", R"({"city": "Paris"})")));
    EXPECT_FALSE(accepts(kNamedNow, block("now", "{}") + "\n" + block("now", "{}")));
    Matcher m = matcher(kNamedNow);
    auto mask = m.mask();
    EXPECT_TRUE(m.allowed(mask, kOpenTok));  // the model's own token for the tag
    EXPECT_FALSE(m.allowed(mask, kEnd));
    EXPECT_FALSE(m.allowed(mask, kCloseTok));
}

// "none" compiles nothing; "auto" compiles the calls like "required" (the engine starts the
// grammar at <tool_call>), so a schema it cannot compile is an error there too (the public
// Tools::constraint() then leaves "auto" calls unchecked).
TEST(ToolGrammar, NoneConstrainsNothingAndSchemasAreChecked) {
    const auto all = tools();
    EXPECT_EQ(tool_call_gbnf(all, ToolChoice{ToolChoice::Mode::kNone, "", true}).value(), "");
    const auto automatic = tool_call_gbnf(all, ToolChoice{});
    ASSERT_FALSE(automatic.ok());
    EXPECT_NE(automatic.status().message().find("multipleOf"), std::string::npos);
    std::vector<text::ChatTool> good(all.begin(), all.begin() + 2);
    const auto calls = tool_call_gbnf(good, ToolChoice{});
    ASSERT_TRUE(calls.ok()) << calls.status().message();
    EXPECT_EQ(calls.value().rfind("root ::= tool-call", 0), 0u) << calls.value();
    // Only the functions the choice may call are compiled: the bad schema of tools[2] is an
    // error for "required" and for naming it, not for naming another.
    const auto req = tool_call_gbnf(all, kRequired);
    ASSERT_FALSE(req.ok());
    EXPECT_NE(req.status().message().find("tools[2] ('bad') parameters"), std::string::npos)
        << req.status().message();
    EXPECT_NE(req.status().message().find("multipleOf"), std::string::npos);
    EXPECT_TRUE(tool_call_gbnf(all, kNamedNow).ok());
    EXPECT_FALSE(tool_call_gbnf(all, ToolChoice{ToolChoice::Mode::kNamed, "nope", true}).ok());
}

// Random walks through the mask: every answer the grammar lets out is read by the parser as
// calls only, named among the tools, with arguments that are JSON objects.
TEST(ToolGrammar, EveryAllowedAnswerParsesAsCalls) {
    for (const ToolChoice& choice : {kRequiredOne, kNamedNow, kRequired}) {
        for (unsigned seed = 0; seed < 12; ++seed) {
            Matcher m = matcher(choice);
            std::mt19937 rng(seed);
            std::string text;
            int steps = 0;
            while (!m.finished() && steps++ < 4000) {
                const auto mask = m.mask();
                std::vector<std::int32_t> allowed;
                for (std::int32_t id = 0; id < vocab()->size(); ++id) {
                    if (m.allowed(mask, id)) allowed.push_back(id);
                }
                ASSERT_FALSE(allowed.empty()) << text;
                // Favour the end once allowed, so walks with several calls stay short.
                std::int32_t id = allowed[rng() % allowed.size()];
                if (m.can_end() && rng() % 2 == 0) id = kEnd;
                ASSERT_TRUE(m.accept(id));
                if (id != kEnd) text += vocab()->bytes(id);
            }
            ASSERT_TRUE(m.finished()) << text;
            text::ToolCallParser p({"get_weather", "now"});
            std::vector<text::ToolCallEvent> events;
            p.push(text, events);
            p.finish(events);
            EXPECT_EQ(p.content(), "") << text;
            ASSERT_FALSE(p.calls().empty()) << text;
            if (!choice.parallel || choice.mode == ToolChoice::Mode::kNamed) {
                EXPECT_EQ(p.calls().size(), 1U);
            }
            for (const auto& c : p.calls()) {
                if (choice.mode == ToolChoice::Mode::kNamed) {
                    EXPECT_EQ(c.name, "now");
                }
                EXPECT_EQ(c.arguments.front(), '{') << c.arguments;
            }
        }
    }
}

}  // namespace
}  // namespace qvl::grammar
