#include "api/convert.h"

#include <span>

#include "kernels/isa.h"

namespace qvl::api {

Status from_engine(const base::Status& status) {
    // The public enum mirrors base::ErrorCode value for value (checked in api_test).
    return Status(ErrorCode(int(status.code())), status.message());
}

base::Result<runtime::SessionOptions> to_engine(const SessionOptions& options) {
    runtime::SessionOptions so;
    so.threads = options.threads;
    so.ctx_size = options.ctx_size;
    so.min_image_tokens = options.min_image_tokens;
    so.max_image_tokens = options.max_image_tokens;
    so.precision = runtime::Precision(int(options.precision));
    if (!options.isa.empty()) {
        kernels::Isa isa{};
        if (!kernels::parse_isa(options.isa, &isa)) {
            return base::error(base::ErrorCode::kInvalidArgument,
                               "isa '{}' is not a kernel tier (expected scalar, avx2, avx512, "
                               "avx512bf16)",
                               options.isa);
        }
        so.isa = isa;
    }
    so.profile = options.profile;
    so.trace_dir = options.trace_dir;
    return so;
}

// The public enum mirrors runtime::Precision value for value.
static_assert(int(Precision::kAuto) == int(runtime::Precision::kAuto) &&
              int(Precision::kF32) == int(runtime::Precision::kF32) &&
              int(Precision::kBF16) == int(runtime::Precision::kBF16) &&
              int(Precision::kBF16All) == int(runtime::Precision::kBF16All) &&
              int(Precision::kF32KvBF16) == int(runtime::Precision::kF32KvBF16));

Precision from_engine(runtime::Precision precision) { return Precision(int(precision)); }

std::vector<text::ChatMessage> to_engine(const std::vector<Message>& messages) {
    std::vector<text::ChatMessage> out;
    for (const Message& m : messages) {
        text::ChatMessage cm{.role = m.role};
        for (const ToolCall& c : m.tool_calls) {
            cm.tool_calls.push_back({.id = c.id, .name = c.name, .arguments = c.arguments});
        }
        for (const ContentPart& p : m.content) {
            if (p.kind == ContentPart::Kind::kText) {
                cm.parts.push_back({.kind = text::ChatPart::Kind::kText, .text = p.text});
            } else {
                cm.parts.push_back({.kind = text::ChatPart::Kind::kImage, .image_path = p.path});
            }
        }
        out.push_back(std::move(cm));
    }
    return out;
}

namespace {

base::Status engine_status(const Status& st) {
    return base::Status(base::ErrorCode(int(st.code())), st.message());
}

base::Result<io::Image> load_rgb(const ContentPart& p, const io::ImageLimits& limits) {
    if (p.width < 1 || p.height < 1 ||
        std::uint64_t(p.width) * std::uint64_t(p.height) > limits.max_pixels) {
        return base::error(base::ErrorCode::kOutOfRange, "{}: {}x{} pixels is outside 1..{} pixels",
                           p.path, p.width, p.height, limits.max_pixels);
    }
    if (p.data.size() != std::size_t(p.width) * std::size_t(p.height) * 3) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "{}: {}x{} RGB needs {} bytes, got {}", p.path, p.width, p.height,
                           std::size_t(p.width) * std::size_t(p.height) * 3, p.data.size());
    }
    return io::Image{.width = p.width, .height = p.height, .rgb = p.data};
}

// Without a resolver a URL part may only name a local file.
Result<ContentPart> default_resolve(const ContentPart& part) {
    constexpr std::string_view kFile = "file://";
    if (std::string_view(part.url).starts_with(kFile)) {
        return ContentPart::image_file(part.url.substr(kFile.size()));
    }
    return Status(ErrorCode::kUnsupported,
                  part.path + ": only file:// image URLs can be loaded here, not '" +
                      part.url.substr(0, 64) + "'");
}

}  // namespace

base::Result<io::Image> load_image_part(const ContentPart& p, const io::ImageLimits& limits,
                                        const MediaResolver& resolve) {
    switch (p.kind) {
        case ContentPart::Kind::kImageFile:
            return io::load_image(p.path, limits);
        case ContentPart::Kind::kImageBytes:
            return io::decode_image(std::as_bytes(std::span(p.data)), limits, p.path);
        case ContentPart::Kind::kImageRgb:
            return load_rgb(p, limits);
        case ContentPart::Kind::kImageUrl: {
            Result<ContentPart> resolved = resolve ? resolve(p) : default_resolve(p);
            if (!resolved.ok()) return engine_status(resolved.status());
            if (resolved->kind == ContentPart::Kind::kImageUrl) {
                return base::error(base::ErrorCode::kInternal,
                                   "{}: the media resolver returned a URL", p.path);
            }
            base::Result<io::Image> image = load_image_part(resolved.value(), limits, resolve);
            if (image.ok() || resolved->path == p.path) return image;
            return image.status().with_context(p.path + ": ");
        }
        case ContentPart::Kind::kText:
            break;
    }
    return base::error(base::ErrorCode::kInternal, "{}: not an image part", p.path);
}

const ContentPart* image_part(const std::vector<Message>& messages, int index) {
    int seen = 0;
    for (const Message& m : messages) {
        for (const ContentPart& p : m.content) {
            if (p.kind != ContentPart::Kind::kText && seen++ == index) return &p;
        }
    }
    return nullptr;
}

io::ImageLimits to_engine(const ImageLimits& limits) {
    return {.max_pixels = limits.max_pixels, .max_file_bytes = limits.max_file_bytes};
}

}  // namespace qvl::api
