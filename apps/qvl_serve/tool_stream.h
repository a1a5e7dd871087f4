// One choice's answer read for tool calls while it streams (qvl::ToolCallParser): the SSE
// chunks its content and calls make, as OpenAI streams them (content deltas; per call a delta
// with its index, id and name, then one with its arguments), and the message a whole answer
// gets. A call is sent when its block closes, so a client never sees half a call.
#pragma once

#include <qvl/qvl.h>

#include <string>
#include <string_view>
#include <vector>

#include "openai_format.h"

namespace qvl::serve {

class ToolStream {
  public:
    explicit ToolStream(const Tools& tools) : parser_(tools) {}

    // The chunks for the next piece of text; logprobs ("" none) goes with the first chunk (or
    // an empty content chunk when the text is held back). first: no chunk of this choice was
    // sent yet (the role goes with the first one); cleared once one is.
    std::string push(const CompletionHeader& h, int index, std::string_view text,
                     std::string_view logprobs, bool& first);
    // The answer ended: the chunks of what was held back.
    std::string finish(const CompletionHeader& h, int index, bool& first);

    bool has_calls() const { return !parser_.calls().empty(); }
    // The whole answer's message (after finish).
    ToolAnswer answer() const { return {parser_.content(), parser_.calls()}; }

  private:
    std::string chunks(const CompletionHeader& h, int index, std::string_view logprobs,
                       bool& first);

    ToolCallParser parser_;
    std::vector<ToolCallParser::Event> events_;
};

// A whole answer read for calls at once.
ToolAnswer read_tool_answer(const Tools& tools, std::string_view text);

}  // namespace qvl::serve
