#include "api/convert.h"

#include <algorithm>
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
            } else if (p.is_video()) {
                cm.parts.push_back({.kind = text::ChatPart::Kind::kVideo,
                                    .image_path = p.path,
                                    .video_fps = p.video_fps,
                                    .video_max_frames = p.video_max_frames});
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
    const bool video = part.is_video();
    if (std::string_view(part.url).starts_with(kFile)) {
        std::string path = part.url.substr(kFile.size());
        return video ? ContentPart::video_file(std::move(path))
                     : ContentPart::image_file(std::move(path));
    }
    return Status(ErrorCode::kUnsupported,
                  part.path + ": only file:// " + (video ? "video" : "image") +
                      " URLs can be loaded here, not '" + part.url.substr(0, 64) + "'");
}

// A URL part through the resolver: a part of the same medium that is not a URL.
base::Result<ContentPart> resolve_url(const ContentPart& p, const MediaResolver& resolve) {
    Result<ContentPart> resolved = resolve ? resolve(p) : default_resolve(p);
    if (!resolved.ok()) return engine_status(resolved.status());
    const ContentPart::Kind url =
        p.is_video() ? ContentPart::Kind::kVideoUrl : ContentPart::Kind::kImageUrl;
    if (resolved->kind == url || resolved->is_video() != p.is_video() ||
        resolved->kind == ContentPart::Kind::kText) {
        return base::error(base::ErrorCode::kInternal,
                           "{}: the media resolver returned a URL or another medium", p.path);
    }
    return std::move(resolved).value();
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
            QVL_ASSIGN_OR_RETURN(const ContentPart resolved, resolve_url(p, resolve));
            base::Result<io::Image> image = load_image_part(resolved, limits, resolve);
            if (image.ok() || resolved.path == p.path) return image;
            return image.status().with_context(p.path + ": ");
        }
        default:
            break;
    }
    return base::error(base::ErrorCode::kInternal, "{}: not an image part", p.path);
}

base::Result<io::Video> load_video_part(const ContentPart& p, const io::VideoLimits& limits,
                                        const MediaResolver& resolve,
                                        const io::FrameSampler& sample) {
    switch (p.kind) {
        case ContentPart::Kind::kVideoFile:
            return io::load_video(p.path, limits, sample);
        case ContentPart::Kind::kVideoBytes:
            return io::decode_video(std::as_bytes(std::span(p.data)), limits, p.path, sample);
        case ContentPart::Kind::kVideoUrl: {
            QVL_ASSIGN_OR_RETURN(const ContentPart resolved, resolve_url(p, resolve));
            base::Result<io::Video> video = load_video_part(resolved, limits, resolve, sample);
            if (video.ok() || resolved.path == p.path) return video;
            return video.status().with_context(p.path + ": ");
        }
        default:
            break;
    }
    return base::error(base::ErrorCode::kInternal, "{}: not a video part", p.path);
}

const ContentPart* media_part(const std::vector<Message>& messages, int index, bool video) {
    int seen = 0;
    for (const Message& m : messages) {
        for (const ContentPart& p : m.content) {
            if (p.kind != ContentPart::Kind::kText && p.is_video() == video && seen++ == index)
                return &p;
        }
    }
    return nullptr;
}

io::ImageLimits to_engine(const ImageLimits& limits) {
    return {.max_pixels = limits.max_pixels, .max_file_bytes = limits.max_file_bytes};
}

io::VideoLimits video_limits(const ImageLimits& limits, int ctx_size) {
    io::VideoLimits v;
    v.max_pixels = std::min(v.max_pixels, limits.max_pixels);
    v.max_file_bytes = limits.max_file_bytes;
    v.max_sampled_frames = std::min(v.max_sampled_frames, std::uint64_t(std::max(ctx_size, 1)) * 2);
    return v;
}

}  // namespace qvl::api
