// Tools in the chat template against Hugging Face: tests/data/chat_tools/cases.jsonl holds
// conversations with tools, tool calls and tool results and the text and ids
// apply_chat_template gave for them (make_cases.py there). Plus the tojson writer's corners and
// the tools / tool_choice checks.
#include "text/chat_tools.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "text/chat_template.h"
#include "text/py_json.h"
#include "text/tokenizer.h"

namespace qvl::text {
namespace {

const std::filesystem::path kData(QVL_TEST_DATA_DIR);

io::JsonValue parse(std::string_view text) {
    auto r = io::parse_json(text, "test");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : io::JsonValue();
}

TEST(ChatTools, RendersAsHuggingFace) {
    auto tok = Tokenizer::load(kData / "tiny-qwen3vl");
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    std::ifstream in(kData / "chat_tools" / "cases.jsonl");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        const io::JsonValue c = parse(line);
        const std::string name = c.find("name")->as_string();
        SCOPED_TRACE(name);
        std::vector<ChatTool> tools;
        if (const io::JsonValue* t = c.find("tools")) {
            auto parsed = parse_tools(*t);
            ASSERT_TRUE(parsed.ok()) << parsed.status().message();
            tools = std::move(parsed).value();
        }
        auto messages = parse_messages(*c.find("messages"), name, kData);
        ASSERT_TRUE(messages.ok()) << messages.status().message();
        const std::string text =
            render_chat(messages.value(), c.find("add_generation_prompt")->as_bool(), tools);
        EXPECT_EQ(text, c.find("text")->as_string());
        auto ids = tok.value().encode(text);
        ASSERT_TRUE(ids.ok());
        std::vector<std::int32_t> want;
        for (const io::JsonValue& id : c.find("ids")->items())
            want.push_back(std::int32_t(id.as_int()));
        EXPECT_EQ(ids.value(), want);
        ++n;
    }
    EXPECT_EQ(n, 10);
}

TEST(ChatTools, PythonFloatRepr) {
    const std::pair<double, const char*> cases[] = {
        {1e16, "1e+16"},
        {1e15, "1000000000000000.0"},
        {0.0001, "0.0001"},
        {1e-5, "1e-05"},
        {-0.0, "-0.0"},
        {0.0, "0.0"},
        {1.5e300, "1.5e+300"},
        {123456789.123, "123456789.123"},
        {0.1, "0.1"},
        {100.0, "100.0"},
        {-2.5e-7, "-2.5e-07"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {12.5, "12.5"},
        {0.00012, "0.00012"},
        {1234567890123456.7, "1234567890123456.8"},
    };
    for (const auto& [v, want] : cases) EXPECT_EQ(python_float_repr(v), want) << want;
}

TEST(ChatTools, PythonJsonLikeJsonDumps) {
    // A repeated key keeps its first place and its last value, as a Python dict does.
    EXPECT_EQ(python_json(parse(R"({"b": 1, "a": [1.0, true, null], "b": {"c": "x"}})")),
              R"({"b": {"c": "x"}, "a": [1.0, true, null]})");
    EXPECT_EQ(python_json(parse(R"("q\"\\\/\b\f\n\r\t\u0001\u001f\u007f é 😀")")),
              "\"q\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f é 😀\"");
    EXPECT_EQ(python_json(parse("[]")), "[]");
    EXPECT_EQ(python_json(parse("{}")), "{}");
    EXPECT_EQ(python_json(parse("-0")), "0");
    EXPECT_EQ(python_json(parse("1E2")), "100.0");
    // Integers keep every digit up to 2^64-1, as Python's int does; past it the reader refuses
    // the number and says which numbers it takes.
    EXPECT_EQ(python_json(parse("[9223372036854775807, 9223372036854775808]")),
              "[9223372036854775807, 9223372036854775808]");
    EXPECT_EQ(python_json(parse("-9223372036854775808")), "-9223372036854775808");
    EXPECT_EQ(python_json(parse("18446744073709551615")), "18446744073709551615");
    for (const char* big : {"18446744073709551616", "-9223372036854775809", "1e400"}) {
        auto v = io::parse_json(big, "body");
        ASSERT_FALSE(v.ok()) << big;
        EXPECT_NE(v.status().message().find("2^64-1"), std::string::npos) << v.status().message();
    }
}

TEST(ChatTools, ToolsAndChoiceAreChecked) {
    const char* bad_tools[][2] = {
        {R"({"type": "function"})", "expected an array"},
        {R"([{"type": "retrieval"}])", "tools[0]: \"type\" must be \"function\""},
        {R"([{"type": "function"}])", "tools[0]: no \"function\" object"},
        {R"([{"type": "function", "function": {"name": ""}}])", "without a \"name\""},
        {R"([{"type": "function", "function": {"name": "f", "parameters": 3}}])",
         "not a JSON schema"},
        {R"([{"type": "function", "function": {"name": "f"}},
             {"type": "function", "function": {"name": "f"}}])",
         "tools[1]: the function name 'f' is given twice"},
    };
    for (const auto& [json, fragment] : bad_tools) {
        const auto r = parse_tools(parse(json));
        ASSERT_FALSE(r.ok()) << json;
        EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
    }
    const auto tools = parse_tools(parse(R"([{"type": "function", "function": {"name": "f"}}])"));
    ASSERT_TRUE(tools.ok());
    const auto choice = [&](const char* c, const char* p = nullptr) {
        const io::JsonValue cv = c ? parse(c) : io::JsonValue();
        const io::JsonValue pv = p ? parse(p) : io::JsonValue();
        return parse_tool_choice(c ? &cv : nullptr, p ? &pv : nullptr, tools.value());
    };
    EXPECT_EQ(choice(nullptr).value().mode, ToolChoice::Mode::kAuto);
    EXPECT_EQ(choice(R"("none")").value().mode, ToolChoice::Mode::kNone);
    EXPECT_EQ(choice(R"("required")", "false").value().mode, ToolChoice::Mode::kRequired);
    EXPECT_FALSE(choice(R"("required")", "false").value().parallel);
    const auto named = choice(R"({"type": "function", "function": {"name": "f"}})");
    ASSERT_TRUE(named.ok());
    EXPECT_EQ(named.value().mode, ToolChoice::Mode::kNamed);
    EXPECT_EQ(named.value().name, "f");
    const char* bad_choices[][3] = {
        {R"("sometimes")", nullptr, "\"sometimes\" is not"},
        {R"({"type": "function", "function": {"name": "g"}})", nullptr, "'g' is not among"},
        {R"({"function": {"name": "f"}})", nullptr, "expected a string or"},
        {R"("auto")", "1", "parallel_tool_calls: expected true or false"},
    };
    for (const auto& [c, p, fragment] : bad_choices) {
        const auto r = choice(c, p);
        ASSERT_FALSE(r.ok()) << c;
        EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
    }
    const io::JsonValue req = parse(R"("required")");
    EXPECT_FALSE(parse_tool_choice(&req, nullptr, {}).ok());
}

TEST(ChatTools, CallIdsAreFreshAndShaped) {
    const std::string a = new_tool_call_id();
    const std::string b = new_tool_call_id();
    EXPECT_NE(a, b);
    ASSERT_EQ(a.size(), 29U);
    EXPECT_EQ(a.substr(0, 5), "call_");
    for (const char c : a.substr(5)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)));
}

}  // namespace
}  // namespace qvl::text
