// The tool-call parser: content and calls split as the template writes them, the same result
// however the text is cut into pieces, and malformed blocks kept as content.
#include "text/tool_call_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace qvl::text {
namespace {

struct Result {
    std::string content;                 // from the events
    std::vector<std::string> calls;      // "name arguments"
    std::vector<int> call_indices;       // from the events
    std::string parser_content;          // ToolCallParser::content()
    bool done = false;
};

Result run(std::string_view text, std::size_t piece, int max_calls = 0,
           std::vector<std::string> names = {"get_weather", "now"}) {
    ToolCallParser p(std::move(names), max_calls);
    std::vector<ToolCallEvent> events;
    for (std::size_t i = 0; i < text.size(); i += piece) p.push(text.substr(i, piece), events);
    p.finish(events);
    Result r;
    for (const ToolCallEvent& e : events) {
        if (e.kind == ToolCallEvent::Kind::kContent) {
            EXPECT_FALSE(e.content.empty());
            r.content += e.content;
        } else {
            r.call_indices.push_back(e.index);
        }
    }
    for (const ParsedToolCall& c : p.calls()) {
        EXPECT_EQ(c.id.substr(0, 5), "call_");
        r.calls.push_back(c.name + " " + c.arguments);
    }
    r.parser_content = p.content();
    r.done = p.done();
    return r;
}

// Every way of cutting the text into equal pieces gives the answer one push gives.
Result run_all_pieces(std::string_view text, int max_calls = 0) {
    const Result whole = run(text, text.size() + 1, max_calls);
    for (std::size_t piece = 1; piece <= 13; ++piece) {
        const Result r = run(text, piece, max_calls);
        EXPECT_EQ(r.content, whole.content) << "pieces of " << piece;
        EXPECT_EQ(r.calls, whole.calls) << "pieces of " << piece;
        EXPECT_EQ(r.call_indices, whole.call_indices) << "pieces of " << piece;
        EXPECT_EQ(r.parser_content, whole.content);
        EXPECT_EQ(r.done, whole.done);
    }
    return whole;
}

TEST(ToolCallParser, PlainTextIsContentVerbatim) {
    const std::string text = "Hello <b>world</b>\n<tool  and <tool_cal\n ";
    const Result r = run_all_pieces(text);
    EXPECT_EQ(r.content, text);
    EXPECT_TRUE(r.calls.empty());
}

TEST(ToolCallParser, ContentThenParallelCalls) {
    const Result r = run_all_pieces(
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
        "{\"city\":\"Zürich\",  \"days\": 3}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", "
        "\"arguments\": {}}\n</tool_call>\n");
    EXPECT_EQ(r.content, "Let me check.");
    ASSERT_EQ(r.calls.size(), 2U);
    // Arguments are rewritten as the template's tojson writes them.
    EXPECT_EQ(r.calls[0], "get_weather {\"city\": \"Zürich\", \"days\": 3}");
    EXPECT_EQ(r.calls[1], "now {}");
    EXPECT_EQ(r.call_indices, (std::vector<int>{0, 1}));
}

TEST(ToolCallParser, TextAroundCallsKeepsItsWords) {
    const Result r = run_all_pieces(
        "<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>\n\nDone: see above. ");
    EXPECT_EQ(r.content, "Done: see above. ");
    ASSERT_EQ(r.calls.size(), 1U);
}

TEST(ToolCallParser, MalformedBlocksStayContent) {
    const char* cases[] = {
        // never closed (cut by max_tokens)
        "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
        // not JSON
        "A\n<tool_call>\n{\"name\": get_weather}\n</tool_call>",
        // a function that is not among the tools
        "<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n</tool_call>",
        // arguments that are not an object
        "<tool_call>\n{\"name\": \"now\", \"arguments\": \"{}\"}\n</tool_call>",
        // no arguments
        "<tool_call>\n{\"name\": \"now\"}\n</tool_call> tail",
        // not an object
        "<tool_call>[1, 2]</tool_call>",
    };
    for (const char* text : cases) {
        const Result r = run_all_pieces(text);
        EXPECT_EQ(r.content, text);
        EXPECT_TRUE(r.calls.empty()) << text;
    }
    // A bad block between good ones stays content where it was; the good ones are calls.
    const Result mixed = run_all_pieces(
        "<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>\n<tool_call>oops"
        "</tool_call>\n<tool_call>{\"name\": \"now\", \"arguments\": {\"a\": 1}}</tool_call>");
    EXPECT_EQ(mixed.content, "<tool_call>oops</tool_call>");
    EXPECT_EQ(mixed.calls, (std::vector<std::string>{"now {}", "now {\"a\": 1}"}));
}

TEST(ToolCallParser, AnyNameWhenNoneAreListedAndMaxCallsStops) {
    const std::string two =
        "<tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>\n"
        "<tool_call>{\"name\": \"y\", \"arguments\": {}}</tool_call>";
    const Result any = run(two, 5, 0, {});
    EXPECT_EQ(any.calls, (std::vector<std::string>{"x {}", "y {}"}));
    EXPECT_FALSE(any.done);
    const Result one = run(two, 5, 1, {});
    EXPECT_EQ(one.calls, (std::vector<std::string>{"x {}"}));
    EXPECT_TRUE(one.done);
    EXPECT_EQ(one.content, "");
}

}  // namespace
}  // namespace qvl::text
