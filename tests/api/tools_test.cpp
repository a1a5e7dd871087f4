// Tools through the public API over the tiny checkpoint: Engine::prepare with tools gives the
// ids Hugging Face's apply_chat_template gives (tests/data/chat_tools/cases.jsonl), a named
// tool choice generates a call the ToolCallParser reads, and bad tools or choices are errors.
#include <gtest/gtest.h>
#include <qvl/qvl.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "api/public_tiny.h"
#include "support/golden.h"

namespace qvl {
namespace {

using test::tiny;

Engine make_engine() {
    EngineOptions eo;
    eo.session = {.threads = 1, .ctx_size = 1024, .precision = Precision::kF32};
    Result<Engine> e = Engine::create(tiny(), eo);
    EXPECT_TRUE(e.ok()) << e.status().message();
    return std::move(e).value();
}

JsonValue json(std::string_view text) {
    Result<JsonValue> v = parse_json(text, "test");
    EXPECT_TRUE(v.ok()) << v.status().message();
    return v.ok() ? std::move(v).value() : JsonValue();
}

TEST(PublicTools, PromptsAreHuggingFaceIds) {
    const Engine engine = make_engine();
    std::ifstream in(test::test_data_dir() / "chat_tools" / "cases.jsonl");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        const JsonValue c = json(line);
        SCOPED_TRACE(c.find("name")->as_string());
        Result<std::vector<Message>> messages = parse_messages(*c.find("messages"), "case", ".");
        ASSERT_TRUE(messages.ok()) << messages.status().message();
        Tools tools;
        if (const JsonValue* t = c.find("tools")) {
            Result<Tools> parsed = Tools::parse(*t);
            ASSERT_TRUE(parsed.ok()) << parsed.status().message();
            tools = std::move(parsed).value();
        }
        Result<Prompt> p =
            engine.prepare(messages.value(), tools, c.find("add_generation_prompt")->as_bool());
        ASSERT_TRUE(p.ok()) << p.status().message();
        std::vector<std::int32_t> want;
        for (const JsonValue& id : c.find("ids")->items())
            want.push_back(std::int32_t(id.as_int()));
        EXPECT_EQ(p.value().token_ids(), want);
        Result<std::string> text = tiny().detokenize(want);
        ASSERT_TRUE(text.ok());
        EXPECT_EQ(text.value(), c.find("text")->as_string());
        ++n;
    }
    EXPECT_EQ(n, 10);
    EXPECT_FALSE(tiny().detokenize(std::vector<std::int32_t>{-1}).ok());
}

TEST(PublicTools, NamedChoiceGeneratesAValidCall) {
    Engine engine = make_engine();
    const JsonValue tools_json = json(R"([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "東京"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["city", "days"],
        "additionalProperties": false}}}, {"type": "function", "function": {"name": "now"}}])");
    const JsonValue choice = json(R"({"type": "function", "function": {"name": "get_weather"}})");
    Result<Tools> tools = Tools::parse(tools_json, &choice);
    ASSERT_TRUE(tools.ok()) << tools.status().message();
    EXPECT_TRUE(tools->calls_allowed());
    Result<OutputConstraint> constraint = tools->constraint();
    ASSERT_TRUE(constraint.ok()) << constraint.status().message();
    ASSERT_FALSE(constraint->empty());
    Result<Prompt> p =
        engine.prepare({{.role = "user", .content = {ContentPart::from_text("Weather in Paris?")}}},
                       tools.value());
    ASSERT_TRUE(p.ok());
    Result<Generation> g = engine.generate(Request{.prompt = std::move(p).value(),
                                                   .max_tokens = 200,
                                                   .sampling = {},
                                                   .constraint = constraint.value()});
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->finish_reason, "stop") << g->text;
    ToolCallParser parser(tools.value());
    std::vector<ToolCallParser::Event> events;
    for (const char c : g->text) parser.push(std::string_view(&c, 1), events);
    parser.finish(events);
    ASSERT_EQ(parser.calls().size(), 1u) << g->text;
    EXPECT_EQ(parser.calls()[0].name, "get_weather");
    EXPECT_EQ(parser.content(), "");
    const JsonValue args = json(parser.calls()[0].arguments);
    ASSERT_TRUE(args.is_object());
    EXPECT_NE(args.find("city"), nullptr);
    EXPECT_NE(args.find("days"), nullptr);
}

// Under "auto" the answer is free until the model opens a call; from <tool_call> on, only valid
// calls, and with parallel_tool_calls false the turn ends after the first one. The random tiny
// model is pushed to open a call with a logit bias on <tool_call> (which it would otherwise
// keep choosing inside the call too, were it not for the grammar).
TEST(PublicTools, AutoCallsAreValidOnceOpened) {
    Engine engine = make_engine();
    const JsonValue tools_json = json(R"([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "東京"]}},
        "required": ["city"], "additionalProperties": false}}}])");
    const JsonValue single = json("false");
    Result<Tools> tools = Tools::parse(tools_json, nullptr, &single);
    ASSERT_TRUE(tools.ok()) << tools.status().message();
    Result<OutputConstraint> constraint = tools->constraint();
    ASSERT_TRUE(constraint.ok()) << constraint.status().message();
    EXPECT_TRUE(constraint->triggered());
    Result<Prompt> p = engine.prepare(
        {{.role = "user", .content = {ContentPart::from_text("Weather?")}}}, tools.value());
    ASSERT_TRUE(p.ok());
    Sampling sampling;
    Result<Prompt> tag = engine.prepare(
        {{.role = "user", .content = {ContentPart::from_text("<tool_call>")}}}, {}, false);
    ASSERT_TRUE(tag.ok());
    // The user turn's tokens: <|im_start|> user \n <tool_call> <|im_end|> \n; the 4th is the tag.
    ASSERT_GE(tag->token_ids().size(), 4u);
    const std::int32_t call_id = tag->token_ids()[3];
    ASSERT_EQ(tiny().detokenize(std::vector<std::int32_t>{call_id}).value(), "<tool_call>");
    sampling.logit_bias = {{call_id, 100.0f}};
    Result<Generation> g = engine.generate(Request{.prompt = std::move(p).value(),
                                                   .max_tokens = 120,
                                                   .sampling = sampling,
                                                   .constraint = constraint.value()});
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->finish_reason, "stop") << g->text;
    ToolCallParser parser(tools.value());
    std::vector<ToolCallParser::Event> events;
    parser.push(g->text, events);
    parser.finish(events);
    ASSERT_EQ(parser.calls().size(), 1u) << g->text;
    const JsonValue args = json(parser.calls()[0].arguments);
    ASSERT_NE(args.find("city"), nullptr) << g->text;
    EXPECT_EQ(g->text.substr(g->text.size() - 12), "</tool_call>") << g->text;

    // Unsupported parameter keywords leave "auto" calls unchecked instead of refusing.
    const JsonValue odd = json(R"([{"type": "function", "function": {"name": "f",
        "parameters": {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 2}}}}}])");
    Result<Tools> unchecked = Tools::parse(odd);
    ASSERT_TRUE(unchecked.ok());
    ASSERT_TRUE(unchecked->constraint().ok());
    EXPECT_TRUE(unchecked->constraint()->empty());
}

// Under "none" the tools stay in the prompt but <tool_call> is banned: even a +100 logit bias
// toward it (which makes "auto" open a call above) cannot make the answer hold one.
TEST(PublicTools, NoneNeverOpensACall) {
    Engine engine = make_engine();
    const JsonValue tools_json = json(R"([{"type": "function", "function": {"name": "now"}}])");
    const JsonValue none = json(R"("none")");
    Result<Tools> tools = Tools::parse(tools_json, &none);
    ASSERT_TRUE(tools.ok()) << tools.status().message();
    Result<OutputConstraint> constraint = tools->constraint();
    ASSERT_TRUE(constraint.ok()) << constraint.status().message();
    EXPECT_FALSE(constraint->empty());
    EXPECT_FALSE(constraint->triggered());
    Result<Prompt> tag = engine.prepare(
        {{.role = "user", .content = {ContentPart::from_text("<tool_call>")}}}, {}, false);
    ASSERT_TRUE(tag.ok());
    const std::int32_t call_id = tag->token_ids()[3];
    ASSERT_EQ(tiny().detokenize(std::vector<std::int32_t>{call_id}).value(), "<tool_call>");
    for (const bool banned : {false, true}) {
        Result<Prompt> p = engine.prepare(
            {{.role = "user", .content = {ContentPart::from_text("Time?")}}}, tools.value());
        ASSERT_TRUE(p.ok());
        Sampling sampling;
        sampling.logit_bias = {{call_id, 100.0f}};
        Result<Generation> g = engine.generate(
            Request{.prompt = std::move(p).value(),
                    .max_tokens = 8,
                    .sampling = sampling,
                    .constraint = banned ? constraint.value() : OutputConstraint()});
        ASSERT_TRUE(g.ok()) << g.status().message();
        const bool opened =
            std::find(g->tokens.begin(), g->tokens.end(), call_id) != g->tokens.end();
        EXPECT_EQ(opened, !banned) << g->text;  // the bias alone does open one
    }
}

TEST(PublicTools, BadToolsAndChoicesAreErrors) {
    const JsonValue tools_json = json(R"([{"type": "function", "function": {"name": "f",
        "parameters": {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 2}}}}}])");
    const JsonValue none = json(R"("none")");
    Result<Tools> t = Tools::parse(tools_json, &none);
    ASSERT_TRUE(t.ok());
    EXPECT_FALSE(t->calls_allowed());
    EXPECT_TRUE(t->constraint().ok());  // "none" compiles no grammar, it only bans the opener
    const JsonValue required = json(R"("required")");
    t = Tools::parse(tools_json, &required);
    ASSERT_TRUE(t.ok());
    const Result<OutputConstraint> c = t->constraint();
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("multipleOf"), std::string::npos) << c.status().message();
    EXPECT_FALSE(Tools::parse(json("{}")).ok());
    EXPECT_FALSE(Tools::parse(JsonValue(), &required).ok());  // required without tools
    EXPECT_FALSE(Tools().calls_allowed());
}

}  // namespace
}  // namespace qvl
