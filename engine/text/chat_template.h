// The Qwen3-VL Instruct chat template (chat_template.json of Qwen3-VL-*-Instruct, rendered by
// hand: no Jinja engine), the --messages file format (docs/cli.md) and the image placeholder
// expansion of Qwen3VLProcessor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "text/chat_tools.h"

namespace qvl {
class JsonValue;  // qvl/qvl.h (io::JsonValue)
}  // namespace qvl

namespace qvl::text {

struct ChatPart {
    enum class Kind { kText, kImage, kVideo } kind = Kind::kText;
    std::string text;        // kText: the text, verbatim
    std::string image_path;  // kImage, kVideo: a file path (already resolved by load_messages_file)
    // kImage: the encoded image (JPEG/PNG/WebP/GIF) itself, when it comes from memory (stdin, an
    // upload); image_path then only names it in messages.
    std::vector<std::uint8_t> image_bytes;
    // kVideo: sampling overrides (0: the model's video_preprocessor_config.json).
    double video_fps = 0;
    int video_max_frames = 0;
};

// A call the assistant made, as the history gives it back.
struct ChatToolCall {
    std::string id;  // tool_call id (the template does not render it)
    std::string name;
    std::string arguments;  // JSON text, rendered verbatim (an object given is written by tojson)
};

struct ChatMessage {
    std::string role;  // system | user | assistant | tool
    std::vector<ChatPart> parts;
    std::vector<ChatToolCall> tool_calls;  // assistant only
};

// Renders the Qwen3-VL Instruct template exactly as the Jinja template does:
//   - without tools, messages[0] with role system: "<|im_start|>system\n" + its text parts +
//     "<|im_end|>\n"; a system message anywhere else is dropped, as the template does;
//   - with tools: "<|im_start|>system\n" + (the leading system message's text + "\n\n") +
//     the "# Tools" preamble, each tool's JSON on its own line inside <tools></tools>, and the
//     <tool_call> instructions + "<|im_end|>\n";
//   - user: "<|im_start|>user\n" + parts in order, each image part as
//     "<|vision_start|><|image_pad|><|vision_end|>", each video part as
//     "<|vision_start|><|video_pad|><|vision_end|>" + "<|im_end|>\n";
//   - assistant: "<|im_start|>assistant\n" + its text parts (images dropped) + each tool call
//     as "<tool_call>\n{\"name\": \"NAME\", \"arguments\": ARGS}\n</tool_call>" (after a
//     "\n" unless it is the first and there is no content) + "<|im_end|>\n";
//   - tool: a run of tool messages is one "<|im_start|>user" turn with each message as
//     "\n<tool_response>\n" + text + "\n</tool_response>", closed by "<|im_end|>\n";
//   - add_generation_prompt appends "<|im_start|>assistant\n".
// No default system prompt and no <think> block (Qwen3-VL Instruct). Content counts as absent
// (no "\n" before the first tool call) when it has no parts, as the template's test of an
// empty string or list: parsers give an empty string content no part.
std::string render_chat(std::span<const ChatMessage> messages, bool add_generation_prompt = true,
                        std::span<const ChatTool> tools = {});

// Parses a --messages file (docs/cli.md): a JSON array of HF chat messages, or an object holding
// one under "messages". content is a string or a list of {"type": "image", "image": path} /
// {"type": "video", "video": path} / {"type": "text", "text": ...} items ({"image": path},
// {"type": "image_url", "image_url": path or {"url": path}}, the same for video_url, and
// "file://" paths are accepted too). Relative image and video paths are resolved
// against the JSON file's folder. Rejected with kInvalidArgument (message names the file and the
// element, e.g. "messages[2].content[0]"): roles other than system/user/assistant/tool, a system
// message that is not first, images or videos outside user messages (the template would drop
// them silently), items that are neither text, image nor video, tool_calls outside assistant
// messages or without a function name and arguments, an empty conversation. An assistant
// message with tool_calls may have null or no content. Remote (http/data) images and videos:
// kUnsupported. Missing file: kNotFound; bad JSON: kCorruptFile.
base::Result<std::vector<ChatMessage>> load_messages_file(const std::filesystem::path& path);

// The same for an already parsed value (a line of a --batch file): `label` prefixes errors
// ("batch.jsonl:3"), relative image paths resolve against image_dir.
base::Result<std::vector<ChatMessage>> parse_messages(const JsonValue& messages,
                                                      const std::string& label,
                                                      const std::filesystem::path& image_dir);

// Expands every image_pad_id in `ids` (in order) to image_tokens[i] copies (HF
// Qwen3VLProcessor: N = t*h*w / merge^2 per image). kInvalidArgument if the number of pads and
// images differ or a count is < 1.
base::Result<std::vector<std::int32_t>> expand_image_pads(std::span<const std::int32_t> ids,
                                                          std::int32_t image_pad_id,
                                                          std::span<const int> image_tokens);

}  // namespace qvl::text
