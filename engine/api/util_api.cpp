// The small utilities of the public header that programs share with the engine: JSON, the
// messages format, names of precisions and kernel tiers, images, .npy files, the log level.
#include <fmt/format.h>

#include "api/convert.h"
#include "api/internals.h"
#include "base/cpu_budget.h"
#include "base/log.h"
#include "base/npy.h"
#include "base/version.h"
#include "io/json.h"
#include "io/json_write.h"
#include "io/png_encode.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace qvl {
namespace {

Result<std::vector<Message>> from_engine(base::Result<std::vector<text::ChatMessage>> chat) {
    if (!chat.ok()) return api::from_engine(chat.status());
    std::vector<Message> out;
    for (text::ChatMessage& m : chat.value()) {
        Message msg{.role = m.role};
        for (text::ChatToolCall& c : m.tool_calls) {
            msg.tool_calls.push_back({.id = std::move(c.id),
                                      .name = std::move(c.name),
                                      .arguments = std::move(c.arguments)});
        }
        for (text::ChatPart& p : m.parts) {
            if (p.kind == text::ChatPart::Kind::kText) {
                msg.content.push_back(ContentPart::from_text(std::move(p.text)));
            } else if (p.kind == text::ChatPart::Kind::kVideo) {
                msg.content.push_back(ContentPart::video_file(std::move(p.image_path)));
            } else {
                msg.content.push_back(ContentPart::image_file(std::move(p.image_path)));
            }
        }
        out.push_back(std::move(msg));
    }
    return out;
}

}  // namespace

Result<std::vector<Message>> load_messages_file(const std::string& path) {
    return from_engine(text::load_messages_file(path));
}

Result<std::vector<Message>> parse_messages(const JsonValue& messages, const std::string& label,
                                            const std::string& image_dir) {
    return from_engine(text::parse_messages(messages, label, image_dir));
}

Result<JsonValue> parse_json(std::string_view text, std::string_view what) {
    base::Result<JsonValue> v = io::parse_json(text, what);
    if (!v.ok()) return api::from_engine(v.status());
    return std::move(v).value();
}

std::string json_quote(std::string_view s) { return io::json_quote(s); }
std::string json_number(double v) { return io::json_number(v); }

Result<std::string> read_text_file(const std::string& path, std::uint64_t max_bytes) {
    base::Result<std::string> text = io::read_text_file(path, max_bytes);
    if (!text.ok()) return api::from_engine(text.status());
    return std::move(text).value();
}

Status check_utf8(std::string_view text) {
    return api::from_engine(text::Tokenizer::check_utf8(text));
}

std::optional<Precision> precision_from_name(std::string_view name) {
    const std::optional<runtime::Precision> p = runtime::precision_from_name(name);
    if (!p) return std::nullopt;
    return api::from_engine(*p);
}

const char* precision_name(Precision precision) {
    return runtime::precision_name(runtime::Precision(int(precision)));
}

std::string precision_choices() { return runtime::precision_choices(); }

Result<std::string> kernel_tier(std::string_view requested) {
    if (requested.empty()) return std::string(runtime::kernel_isa_name());
    kernels::Isa isa{};
    if (!kernels::parse_isa(requested, &isa)) {
        return Status(ErrorCode::kInvalidArgument,
                      fmt::format("'{}' is not a kernel tier (expected scalar, avx2, avx512, "
                                  "avx512bf16)",
                                  requested));
    }
    return std::string(runtime::kernel_isa_name(isa));
}

Result<RgbImage> decode_image(const ContentPart& image, const ImageLimits& limits) {
    return api::guarded<RgbImage>("decoding", [&]() -> Result<RgbImage> {
        base::Result<io::Image> im = api::load_image_part(image, api::to_engine(limits), {});
        if (!im.ok()) return api::from_engine(im.status());
        return RgbImage{.width = im->width, .height = im->height, .rgb = std::move(im->rgb)};
    });
}

Status write_png(const std::string& path, const RgbImage& image) {
    const io::Image im{.width = image.width, .height = image.height, .rgb = image.rgb};
    return api::from_engine(io::write_png(path, im));
}

Status write_npy(const std::string& path, std::span<const float> data,
                 const std::vector<std::int64_t>& shape) {
    const std::string err = base::write_npy_f32(path, data, shape);
    if (err.empty()) return {};
    return Status(ErrorCode::kIo, err);
}

int default_threads(std::string* reason) {
    const base::ThreadBudget& b = base::default_thread_budget();
    if (reason != nullptr) *reason = b.reason;
    return b.threads;
}

void set_log_level(LogLevel level) { base::set_log_level(base::LogLevel(int(level))); }

// The public levels mirror the engine's value for value.
static_assert(int(LogLevel::kDebug) == int(base::LogLevel::kDebug) &&
              int(LogLevel::kInfo) == int(base::LogLevel::kInfo) &&
              int(LogLevel::kWarning) == int(base::LogLevel::kWarning) &&
              int(LogLevel::kError) == int(base::LogLevel::kError) &&
              int(LogLevel::kSilent) == int(base::LogLevel::kSilent));

const char* version() { return base::version(); }

}  // namespace qvl
