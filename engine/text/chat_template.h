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

namespace qvl {
class JsonValue;  // qvl/qvl.h (io::JsonValue)
}  // namespace qvl

namespace qvl::text {

struct ChatPart {
    enum class Kind { kText, kImage } kind = Kind::kText;
    std::string text;        // kText: the text, verbatim
    std::string image_path;  // kImage: a file path (already resolved by load_messages_file)
    // kImage: the encoded image (JPEG/PNG/WebP/GIF) itself, when it comes from memory (stdin, an
    // upload); image_path then only names it in messages.
    std::vector<std::uint8_t> image_bytes;
};

struct ChatMessage {
    std::string role;  // system | user | assistant
    std::vector<ChatPart> parts;
};

// Renders the Qwen3-VL Instruct template exactly as the Jinja template does (no tools):
//   - messages[0] with role system: "<|im_start|>system\n" + its text parts + "<|im_end|>\n";
//     a system message anywhere else is dropped, as the template does;
//   - user: "<|im_start|>user\n" + parts in order, each image part as
//     "<|vision_start|><|image_pad|><|vision_end|>" + "<|im_end|>\n";
//   - assistant: "<|im_start|>assistant\n" + its text parts (images dropped) + "<|im_end|>\n";
//   - other roles render nothing;
//   - add_generation_prompt appends "<|im_start|>assistant\n".
// No default system prompt and no <think> block (Qwen3-VL Instruct).
std::string render_chat(std::span<const ChatMessage> messages, bool add_generation_prompt = true);

// Parses a --messages file (docs/cli.md): a JSON array of HF chat messages, or an object holding
// one under "messages". content is a string or a list of {"type": "image", "image": path} /
// {"type": "text", "text": ...} items ({"image": path}, {"type": "image_url", "image_url": path
// or {"url": path}} and "file://" paths are accepted too). Relative image paths are resolved
// against the JSON file's folder. Rejected with kInvalidArgument (message names the file and the
// element, e.g. "messages[2].content[0]"): roles other than system/user/assistant, a system
// message that is not first, images outside user messages (the template would drop them
// silently), items that are neither text nor image, an empty conversation. Video items, tool
// calls and remote (http/data) images: kUnsupported. Missing file: kNotFound; bad JSON:
// kCorruptFile.
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
