#include "tool_stream.h"

namespace qvl::serve {

std::string ToolStream::chunks(const CompletionHeader& h, int index, std::string_view logprobs,
                               bool& first) {
    std::string out;
    for (const ToolCallParser::Event& e : events_) {
        if (e.call < 0) {
            out += chunk_event(h, index, e.content, first, logprobs);
            logprobs = {};
        } else {
            out += tool_call_chunk_events(h, index, e.call, parser_.calls()[std::size_t(e.call)],
                                          first);
        }
        first = false;
    }
    events_.clear();
    if (!logprobs.empty()) {
        out += chunk_event(h, index, "", first, logprobs);
        first = false;
    }
    return out;
}

std::string ToolStream::push(const CompletionHeader& h, int index, std::string_view text,
                             std::string_view logprobs, bool& first) {
    parser_.push(text, events_);
    return chunks(h, index, logprobs, first);
}

std::string ToolStream::finish(const CompletionHeader& h, int index, bool& first) {
    parser_.finish(events_);
    return chunks(h, index, {}, first);
}

ToolAnswer read_tool_answer(const Tools& tools, std::string_view text) {
    ToolCallParser parser(tools);
    std::vector<ToolCallParser::Event> events;
    parser.push(text, events);
    parser.finish(events);
    return {parser.content(), parser.calls()};
}

}  // namespace qvl::serve
