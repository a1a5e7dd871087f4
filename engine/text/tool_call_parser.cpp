#include "text/tool_call_parser.h"

#include <algorithm>
#include <utility>

#include "io/json.h"
#include "text/chat_tools.h"
#include "text/py_json.h"

namespace qvl::text {

namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Length of the longest suffix of s that is a proper prefix of tag (it may become the tag).
std::size_t partial_tag(std::string_view s, std::string_view tag) {
    for (std::size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
        if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
    }
    return 0;
}

// Start of the run of whitespace that ends s[0, end).
std::size_t trailing_space(std::string_view s, std::size_t end) {
    while (end > 0 && is_space(s[end - 1])) --end;
    return end;
}

}  // namespace

ToolCallParser::ToolCallParser(std::vector<std::string> names, int max_calls)
    : names_(std::move(names)), max_calls_(max_calls) {}

void ToolCallParser::emit_text(std::string_view text, std::vector<ToolCallEvent>& out) {
    if (after_call_) {
        std::size_t i = 0;
        while (i < text.size() && is_space(text[i])) ++i;
        text.remove_prefix(i);
    }
    if (text.empty()) return;
    after_call_ = false;
    content_ += text;
    if (!out.empty() && out.back().kind == ToolCallEvent::Kind::kContent) {
        out.back().content += text;
    } else {
        out.push_back({ToolCallEvent::Kind::kContent, std::string(text), -1});
    }
}

bool ToolCallParser::take_call(std::string_view body) {
    auto parsed = io::parse_json(body, "tool call");
    if (!parsed.ok() || !parsed.value().is_object()) return false;
    const io::JsonValue& v = parsed.value();
    const io::JsonValue* name = v.find("name");
    const io::JsonValue* args = v.find("arguments");
    if (name == nullptr || !name->is_string() || args == nullptr || !args->is_object()) {
        return false;
    }
    if (!names_.empty() &&
        std::find(names_.begin(), names_.end(), name->as_string()) == names_.end()) {
        return false;
    }
    calls_.push_back({new_tool_call_id(), name->as_string(), python_json(*args)});
    return true;
}

void ToolCallParser::scan_text(std::vector<ToolCallEvent>& out) {
    const std::size_t open = buf_.find(kOpen);
    if (open == std::string::npos) {
        const std::size_t keep = trailing_space(buf_, buf_.size() - partial_tag(buf_, kOpen));
        emit_text(std::string_view(buf_).substr(0, keep), out);
        buf_.erase(0, keep);
        return;
    }
    const std::size_t ws = trailing_space(buf_, open);
    emit_text(std::string_view(buf_).substr(0, ws), out);
    held_ws_.assign(buf_, ws, open - ws);
    block_.assign(buf_, open + kOpen.size());
    buf_.clear();
    in_block_ = true;
}

void ToolCallParser::scan_block(std::vector<ToolCallEvent>& out) {
    const std::size_t close = block_.find(kClose);
    if (close == std::string::npos) return;
    const std::string body = block_.substr(0, close);
    buf_ = block_.substr(close + kClose.size());
    block_.clear();
    in_block_ = false;
    if (take_call(body)) {
        held_ws_.clear();
        after_call_ = true;
        out.push_back({ToolCallEvent::Kind::kCall, {}, int(calls_.size()) - 1});
        if (max_calls_ > 0 && int(calls_.size()) >= max_calls_) done_ = true;
    } else {
        emit_text(held_ws_ + std::string(kOpen) + body + std::string(kClose), out);
        held_ws_.clear();
    }
}

void ToolCallParser::push(std::string_view text, std::vector<ToolCallEvent>& out) {
    if (done_) return;
    (in_block_ ? block_ : buf_) += text;
    // Each round consumes a block's opening or closing tag, so this ends.
    for (;;) {
        const bool was_in_block = in_block_;
        if (in_block_) {
            scan_block(out);
        } else {
            scan_text(out);
        }
        if (done_ || in_block_ == was_in_block) break;
    }
}

void ToolCallParser::finish(std::vector<ToolCallEvent>& out) {
    if (done_) return;
    if (in_block_) {
        emit_text(held_ws_ + std::string(kOpen) + block_, out);
    } else {
        emit_text(buf_, out);  // whitespace right after a call is dropped there
    }
    buf_.clear();
    block_.clear();
    held_ws_.clear();
    in_block_ = false;
}

}  // namespace qvl::text
