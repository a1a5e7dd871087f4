// Tool calls out of generated text. Qwen3-VL writes a call as the chat template taught it:
//   <tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>
// (several in a row, separated by newlines, are parallel calls). The parser is fed the decoded
// text as it streams and splits it into content and calls, so a server can stream both: content
// comes out as soon as it cannot be the start of a block; a call comes out whole when its block
// closes and holds a JSON object with a "name" that is one of the tools and "arguments" that
// are an object (its arguments are then rewritten by tojson, so the history renders them as
// the model wrote them).
//
// What is not a valid call stays content, verbatim, so a client sees everything the model
// wrote and nothing is half-reported: a block that never closes (the answer was cut, or the
// model stopped), a block whose JSON does not parse, a name not among the tools, arguments
// that are not an object. A call is held until its block closes (rather than streamed in
// argument fragments) because only then is it known to be a call; its arguments then come as
// one fragment. Whitespace between content and a call, and between calls, is the template's
// separator and is dropped. Streamed output equals the output of one push of the whole text.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::text {

struct ParsedToolCall {
    std::string id;  // "call_" + random (chat_tools.h: new_tool_call_id)
    std::string name;
    std::string arguments;  // a JSON object's text
};

struct ToolCallEvent {
    enum class Kind { kContent, kCall };
    Kind kind = Kind::kContent;
    std::string content;  // kContent: the next piece of content
    int index = -1;       // kCall: 0 for the first call of the answer, 1 for the next...
};

class ToolCallParser {
  public:
    // names: the functions a call may name (empty: any name). max_calls > 0 stops the parser
    // after that many calls (parallel_tool_calls false: 1): done() turns true and the caller
    // should stop generating; later text is ignored.
    explicit ToolCallParser(std::vector<std::string> names, int max_calls = 0);

    // Feeds the next piece of decoded text; appends what it completes to `out`.
    void push(std::string_view text, std::vector<ToolCallEvent>& out);
    // The answer has ended: whatever is held back comes out (an open block as content).
    void finish(std::vector<ToolCallEvent>& out);

    bool done() const { return done_; }
    std::span<const ParsedToolCall> calls() const { return calls_; }
    // All content given out so far (the message's content).
    const std::string& content() const { return content_; }

  private:
    void scan_text(std::vector<ToolCallEvent>& out);
    void scan_block(std::vector<ToolCallEvent>& out);
    bool take_call(std::string_view body);
    void emit_text(std::string_view text, std::vector<ToolCallEvent>& out);

    std::vector<std::string> names_;
    int max_calls_ = 0;
    bool in_block_ = false;
    bool after_call_ = false;  // whitespace right after a call is the separator: dropped
    bool done_ = false;
    std::string buf_;      // text mode: held back (trailing whitespace, a partial "<tool_call>")
    std::string held_ws_;  // the whitespace before the open block
    std::string block_;    // block mode: the block's text so far
    std::vector<ParsedToolCall> calls_;
    std::string content_;
};

}  // namespace qvl::text
