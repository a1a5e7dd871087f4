#include "image/video_preprocess.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "image/image_resize.h"
#include "io/json.h"

namespace qvl::image {

using base::ErrorCode;

namespace {

base::Status read_number(const io::JsonValue& root, const std::string& file, const char* key,
                         double lo, double hi, double* out) {
    const io::JsonValue* v = root.find(key);
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_number() || !std::isfinite(v->as_double()) || v->as_double() < lo ||
        v->as_double() > hi) {
        return base::error(ErrorCode::kInvalidArgument,
                           "{}: key '{}': expected a number in [{}, {}]", file, key, lo, hi);
    }
    *out = v->as_double();
    return {};
}

// The keys only the video processor has; `root` is the parsed file.
base::Status read_video_keys(const io::JsonValue& root, const std::string& file,
                             VideoPreprocessConfig* c) {
    QVL_TRY(read_number(root, file, "fps", 1e-3, 1e3, &c->fps));
    double v = double(c->min_frames);
    QVL_TRY(read_number(root, file, "min_frames", 1, 1e5, &v));
    c->min_frames = std::int64_t(v);
    v = double(c->max_frames);
    QVL_TRY(read_number(root, file, "max_frames", 1, 1e5, &v));
    c->max_frames = std::int64_t(v);
    v = double(c->max_video_tokens);
    QVL_TRY(read_number(root, file, "max_video_tokens", 1, 1e7, &v));
    c->max_video_tokens = std::int64_t(v);
    if (const io::JsonValue* n = root.find("num_frames"); n != nullptr && !n->is_null()) {
        v = 0;
        QVL_TRY(read_number(root, file, "num_frames", 1, 1e5, &v));
        c->num_frames = std::int64_t(v);
        // The processor refuses both at once; a config that sets num_frames means it.
        if (const io::JsonValue* f = root.find("fps"); f != nullptr && !f->is_null()) {
            return base::error(ErrorCode::kUnsupported,
                               "{}: keys 'fps' and 'num_frames' are mutually exclusive", file);
        }
    }
    if (const io::JsonValue* cap = root.find("cap_pixels_per_frame"); cap && !cap->is_null()) {
        if (!cap->is_bool())
            return base::error(ErrorCode::kInvalidArgument,
                               "{}: key 'cap_pixels_per_frame': expected a boolean", file);
        c->cap_pixels_per_frame = cap->as_bool();
    }
    if (const io::JsonValue* s = root.find("do_sample_frames"); s && s->is_bool() && !s->as_bool())
        return base::error(ErrorCode::kUnsupported,
                           "{}: key 'do_sample_frames': false is not "
                           "supported",
                           file);
    return {};
}

bool has_key(const io::JsonValue& root, const char* key, const char* size_key) {
    const io::JsonValue* v = root.find(key);
    if (v != nullptr && !v->is_null()) return true;
    const io::JsonValue* size = root.find("size");
    return size != nullptr && size->is_object() && size->find(size_key) != nullptr;
}

}  // namespace

base::Result<VideoPreprocessConfig> load_video_preprocess_config(
    const std::filesystem::path& path) {
    VideoPreprocessConfig config;
    auto parsed = io::read_json_file(path);
    if (!parsed.ok() && parsed.status().code() == ErrorCode::kNotFound) return config;
    if (!parsed.ok()) return parsed.status();
    QVL_ASSIGN_OR_RETURN(PreprocessConfig base, load_preprocess_config(path));
    const io::JsonValue& root = parsed.value();
    // The image reader fills absent sizes with the image defaults; the video ones differ.
    if (!has_key(root, "min_pixels", "shortest_edge") && !has_key(root, "min_pixels", "min_pixels"))
        base.min_pixels = config.base.min_pixels;
    if (!has_key(root, "max_pixels", "longest_edge") && !has_key(root, "max_pixels", "max_pixels"))
        base.max_pixels = config.base.max_pixels;
    config.base = base;
    QVL_TRY(read_video_keys(root, path.string(), &config));
    if (config.max_frames < config.min_frames) {
        return base::error(ErrorCode::kInvalidArgument, "{}: max_frames {} is below min_frames {}",
                           path.string(), config.max_frames, config.min_frames);
    }
    return config;
}

base::Result<std::vector<std::int64_t>> sample_frame_indices(const io::VideoInfo& info,
                                                             const VideoPreprocessConfig& config) {
    const std::int64_t total = info.total_frames;
    if (total <= 0 || !(info.fps > 0)) {
        return base::error(ErrorCode::kInvalidArgument,
                           "cannot sample a video of {} frames at {} fps", total, info.fps);
    }
    std::int64_t n = 0;
    if (config.num_frames) {
        n = *config.num_frames;
    } else {
        // Python: int(total_num_frames / metadata.fps * fps), truncation toward zero.
        const double wanted = double(total) / info.fps * config.fps;
        n = wanted >= 9.0e18 ? std::numeric_limits<std::int64_t>::max() : std::int64_t(wanted);
        n = std::min({std::max(n, config.min_frames), config.max_frames, total});
    }
    if (n < 1) return base::error(ErrorCode::kInvalidArgument, "cannot sample {} frames", n);
    // numpy.linspace(0, total - 1, n): i * step (step = (total-1)/(n-1)), the last one exact;
    // then numpy's round, half to even (nearbyint in the default mode).
    std::vector<std::int64_t> indices(std::size_t(n), 0);
    const double step = n > 1 ? double(total - 1) / double(n - 1) : 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
        const double x = (i == n - 1 && n > 1) ? double(total - 1) : double(i) * step;
        indices[std::size_t(i)] = std::int64_t(std::nearbyint(x));
    }
    return indices;
}

base::Result<std::pair<int, int>> smart_resize_video(std::int64_t num_frames, int height, int width,
                                                     int temporal_factor, int factor,
                                                     std::int64_t min_pixels,
                                                     std::int64_t max_pixels) {
    if (num_frames < temporal_factor || height <= 0 || width <= 0 || factor <= 0) {
        return base::error(ErrorCode::kInvalidArgument,
                           "a video of {} frames of {}x{} (width x height) cannot be resized "
                           "(at least {} frames)",
                           num_frames, width, height, temporal_factor);
    }
    double h = height, w = width;
    if (height < factor || width < factor) {
        // Python: scale = max(f/h, f/w); int(h * scale), truncation.
        const double scale = std::max(double(factor) / h, double(factor) / w);
        h = std::trunc(h * scale);
        w = std::trunc(w * scale);
    }
    const double ratio = std::max(h, w) / std::min(h, w);
    if (!(ratio <= 200)) {
        return base::error(ErrorCode::kInvalidArgument,
                           "video of {}x{} (width x height) has an aspect ratio of {:.4g}, over "
                           "the limit of 200",
                           width, height, ratio);
    }
    const double f = factor;
    double h_bar = std::nearbyint(h / f) * f;
    double w_bar = std::nearbyint(w / f) * f;
    const double t_bar = std::nearbyint(double(num_frames) / temporal_factor) * temporal_factor;
    const double clip = double(num_frames) * h * w;
    if (t_bar * h_bar * w_bar > double(max_pixels)) {
        const double beta = std::sqrt(clip / double(max_pixels));
        h_bar = std::max(f, std::floor(h / beta / f) * f);
        w_bar = std::max(f, std::floor(w / beta / f) * f);
    } else if (t_bar * h_bar * w_bar < double(min_pixels)) {
        const double beta = std::sqrt(double(min_pixels) / clip);
        h_bar = std::ceil(h * beta / f) * f;
        w_bar = std::ceil(w * beta / f) * f;
    }
    if (h_bar < f || w_bar < f || h_bar > 65536 || w_bar > 65536) {
        return base::error(ErrorCode::kInvalidArgument,
                           "video of {}x{} (width x height) resizes to {}x{}, outside [{}, 65536]",
                           width, height, w_bar, h_bar, factor);
    }
    return std::pair<int, int>(int(h_bar), int(w_bar));
}

std::vector<PreprocessedImage> video_frames_as_images(const PreprocessedVideo& video) {
    std::vector<PreprocessedImage> out(std::size_t(std::max(video.grid_t, 0)));
    const std::size_t values = video.grid_t > 0 ? video.pixel_values.size() / video.grid_t : 0;
    for (std::size_t t = 0; t < out.size(); ++t) {
        PreprocessedImage& f = out[t];
        f.resized_height = video.resized_height;
        f.resized_width = video.resized_width;
        f.grid_t = 1;
        f.grid_h = video.grid_h;
        f.grid_w = video.grid_w;
        f.merge_size = video.merge_size;
        f.video_frame = true;
        const auto first = video.pixel_values.begin() + std::ptrdiff_t(t * values);
        f.pixel_values.assign(first, first + std::ptrdiff_t(values));
    }
    return out;
}

std::vector<double> video_timestamps(const std::vector<std::int64_t>& indices, double fps,
                                     int temporal) {
    std::vector<std::int64_t> padded = indices;
    while (!padded.empty() && padded.size() % std::size_t(temporal) != 0)
        padded.push_back(padded.back());
    std::vector<double> out;
    for (std::size_t i = 0; i < padded.size(); i += std::size_t(temporal)) {
        const double first = double(padded[i]) / fps;
        const double last = double(padded[i + std::size_t(temporal) - 1]) / fps;
        out.push_back((first + last) / 2);
    }
    return out;
}

namespace {

// Appends the rows of temporal patch `tp` (frames[tp*T .. tp*T+T-1], the last frame repeated
// past the end): for each merge window in row-major order, its M x M patches, each row laid out
// (channel, frame in pair, y, x) as the processor's permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9).
void patchify_pair(const std::vector<io::Image>& frames, int tp, const PreprocessConfig& c,
                   int grid_h, int grid_w, const float lut[3][256], float* out) {
    const int P = c.patch_size, T = c.temporal_patch_size, M = c.merge_size;
    std::vector<const std::uint8_t*> src(std::size_t(T), nullptr);
    for (int t = 0; t < T; ++t) {
        const std::size_t f = std::min(std::size_t(tp) * T + t, frames.size() - 1);
        src[std::size_t(t)] = frames[f].rgb.data();
    }
    const std::size_t stride = std::size_t(frames[0].width) * 3;
    for (int bh = 0; bh < grid_h / M; ++bh) {
        for (int bw = 0; bw < grid_w / M; ++bw) {
            for (int mh = 0; mh < M; ++mh) {
                for (int mw = 0; mw < M; ++mw) {
                    const std::size_t y0 = std::size_t(bh * M + mh) * P;
                    const std::size_t x0 = std::size_t(bw * M + mw) * P;
                    for (int ch = 0; ch < 3; ++ch) {
                        for (int t = 0; t < T; ++t) {
                            for (int y = 0; y < P; ++y) {
                                const std::uint8_t* row =
                                    src[std::size_t(t)] + (y0 + y) * stride + x0 * 3 + ch;
                                for (int x = 0; x < P; ++x) *out++ = lut[ch][row[3 * x]];
                            }
                        }
                    }
                }
            }
        }
    }
}

}  // namespace

base::Result<PreprocessedVideo> preprocess_video(const io::Video& video,
                                                 const VideoPreprocessConfig& config) {
    const PreprocessConfig& c = config.base;
    const std::int64_t n = std::int64_t(video.frames.size());
    if (n == 0 || video.frames[0].width <= 0 || video.frames[0].height <= 0)
        return base::error(ErrorCode::kInvalidArgument, "a video without frames");
    const int height = video.frames[0].height, width = video.frames[0].width;
    for (const io::Image& f : video.frames) {
        if (f.width != width || f.height != height ||
            f.rgb.size() != std::size_t(width) * height * 3)
            return base::error(ErrorCode::kInvalidArgument, "video frames of different sizes");
    }
    const int factor = c.patch_size * c.merge_size;
    std::int64_t max_pixels = c.max_pixels;
    if (config.cap_pixels_per_frame) {
        // qwen-vl-utils' cap as HF's resize applies it (integer division, int(1.05 * min)).
        const std::int64_t frame_cap = config.max_video_tokens * factor * factor;
        const std::int64_t per_frame = std::max(std::min(frame_cap, c.max_pixels / n),
                                                std::int64_t(double(c.min_pixels) * 1.05));
        max_pixels = per_frame * n;
    }
    QVL_ASSIGN_OR_RETURN(const auto size,
                         smart_resize_video(n, height, width, c.temporal_patch_size, factor,
                                            c.min_pixels, max_pixels));
    PreprocessedVideo out;
    out.resized_height = size.first;
    out.resized_width = size.second;
    out.merge_size = c.merge_size;
    out.grid_t = int((n + c.temporal_patch_size - 1) / c.temporal_patch_size);
    out.grid_h = size.first / c.patch_size;
    out.grid_w = size.second / c.patch_size;
    std::vector<io::Image> resized;
    resized.reserve(video.frames.size());
    for (const io::Image& f : video.frames)
        resized.push_back(resize_bicubic_aa(f, size.first, size.second));
    float lut[3][256];
    normalization_lut(c, lut);
    const std::size_t row = std::size_t(3) * c.temporal_patch_size * c.patch_size * c.patch_size;
    const std::size_t rows_per_pair = std::size_t(out.grid_h) * out.grid_w;
    out.pixel_values.resize(std::size_t(out.grid_t) * rows_per_pair * row);
    for (int tp = 0; tp < out.grid_t; ++tp) {
        patchify_pair(resized, tp, c, out.grid_h, out.grid_w, lut,
                      out.pixel_values.data() + std::size_t(tp) * rows_per_pair * row);
    }
    out.timestamps = video_timestamps(video.indices, video.info.fps, c.temporal_patch_size);
    return out;
}

std::string video_placeholder_text(const PreprocessedVideo& video) {
    std::string pads;
    for (int i = 0; i < video.tokens_per_frame(); ++i) pads += "<|video_pad|>";
    std::string text;
    for (const double t : video.timestamps)
        text += fmt::format("<{:.1f} seconds><|vision_start|>{}<|vision_end|>", t, pads);
    return text;
}

base::Result<std::string> expand_video_wrappers(std::string_view prompt,
                                                std::span<const PreprocessedVideo> videos) {
    static constexpr std::string_view kWrapper = "<|vision_start|><|video_pad|><|vision_end|>";
    std::string out;
    std::size_t at = 0, used = 0;
    for (std::size_t hit = prompt.find(kWrapper); hit != std::string_view::npos;
         hit = prompt.find(kWrapper, at)) {
        if (used == videos.size()) break;
        out.append(prompt.substr(at, hit - at));
        out += video_placeholder_text(videos[used++]);
        at = hit + kWrapper.size();
    }
    out.append(prompt.substr(at));
    if (used != videos.size() || prompt.find(kWrapper, at) != std::string_view::npos) {
        return base::error(ErrorCode::kInvalidArgument,
                           "the prompt has a different number of video placeholders than the {} "
                           "videos given",
                           videos.size());
    }
    return out;
}

}  // namespace qvl::image
