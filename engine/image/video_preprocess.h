// Qwen3-VL video preprocessing, bit-exact with transformers' Qwen3VLVideoProcessor (and the
// timestamps of Qwen3VLProcessor): frame-index sampling from the stream's metadata, the video
// smart_resize (whole clip against the pixel budget, temporal factor), the image path's
// antialiased bicubic uint8 resize and float32 normalisation, padding to the temporal patch by
// repeating the last frame, and patches in the processor's order (frame pair, merge window,
// channel, frame in pair, row, column).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "image/image_preprocess.h"
#include "io/image.h"
#include "io/video.h"

namespace qvl::image {

struct VideoPreprocessConfig {
    // patch/merge/temporal sizes, mean/std; min_pixels / max_pixels are the processor's
    // size.shortest_edge / size.longest_edge, a budget for the whole clip (all frames together).
    PreprocessConfig base = {.min_pixels = 128 * 32 * 32, .max_pixels = 32 * 32 * 768};
    double fps = 2;                          // frames sampled per second of video
    std::optional<std::int64_t> num_frames;  // instead of fps: exactly this many frames
    std::int64_t min_frames = 4;
    std::int64_t max_frames = 768;
    // qwen-vl-utils' per-frame cap (HF's opt-in cap_pixels_per_frame, off by default in HF 5.x).
    bool cap_pixels_per_frame = false;
    std::int64_t max_video_tokens = 768;
};

// Reads video_preprocessor_config.json the way load_preprocess_config reads the image one (size,
// min_pixels/max_pixels, patch/merge/temporal sizes, mean/std, the do_* switches), plus fps,
// num_frames, min_frames, max_frames, cap_pixels_per_frame, max_video_tokens. A missing file:
// the defaults above. fps and num_frames both set, or do_sample_frames false: kUnsupported.
base::Result<VideoPreprocessConfig> load_video_preprocess_config(const std::filesystem::path& path);

// Qwen3VLVideoProcessor.sample_frames: n = int(total / video_fps * fps), clamped to
// [min_frames, max_frames] and to total (or num_frames as given), then
// round(linspace(0, total - 1, n)) with numpy's arithmetic and half-to-even rounding.
base::Result<std::vector<std::int64_t>> sample_frame_indices(const io::VideoInfo& info,
                                                             const VideoPreprocessConfig& config);

// The video smart_resize: sides below `factor` scaled up first, the aspect-ratio limit, sides
// rounded to `factor`, frames to `temporal_factor`, then the clip's t*h*w kept in
// [min_pixels, max_pixels]. Returns {height, width}. Fewer frames than temporal_factor,
// non-positive sizes or an aspect ratio over 200: kInvalidArgument.
base::Result<std::pair<int, int>> smart_resize_video(std::int64_t num_frames, int height, int width,
                                                     int temporal_factor, int factor,
                                                     std::int64_t min_pixels,
                                                     std::int64_t max_pixels);

struct PreprocessedVideo {
    int resized_height = 0, resized_width = 0;
    int grid_t = 0, grid_h = 0, grid_w = 0;  // grid_t in frame pairs (temporal patches)
    int merge_size = 2;
    // [grid_t*grid_h*grid_w, 3*temporal*patch*patch], rows by frame pair then merge window.
    std::vector<float> pixel_values;
    // One per temporal patch: the mean of its first and last frame's time (index / fps).
    std::vector<double> timestamps;
    int tokens_per_frame() const { return grid_h * grid_w / (merge_size * merge_size); }
    int num_video_tokens() const { return grid_t * tokens_per_frame(); }
};

// The pipeline for decoded frames (io::decode_video with sample_frame_indices as the sampler).
// All frames must have one size. Errors: those of smart_resize_video.
base::Result<PreprocessedVideo> preprocess_video(const io::Video& video,
                                                 const VideoPreprocessConfig& config);

// The video as the vision tower takes it: one image per temporal patch (grid_t = 1, its
// pixel_values rows, video_frame set). Qwen3-VL's vision attention never crosses temporal
// patches (cu_seqlens per frame pair) and its position tables repeat over them, so each patch
// runs through the tower like a still image whose two frames differ.
std::vector<PreprocessedImage> video_frames_as_images(const PreprocessedVideo& video);

// Qwen3VLProcessor._calculate_timestamps: indices padded with the last one to a multiple of
// `temporal`, index / fps, then the mean of each group's first and last.
std::vector<double> video_timestamps(const std::vector<std::int64_t>& indices, double fps,
                                     int temporal);

// The text that stands for one video in the prompt: per temporal patch "<%.1f seconds>" then
// vision_start, tokens_per_frame video pads and vision_end (Qwen3VLProcessor.replace_video_token).
std::string video_placeholder_text(const PreprocessedVideo& video);

// The chat template writes "<|vision_start|><|video_pad|><|vision_end|>" for each video part;
// Qwen3VLProcessor replaces the i-th of them by video i's placeholder text (whose own
// start/end pairs replace the outer one). kInvalidArgument when the counts differ.
base::Result<std::string> expand_video_wrappers(std::string_view prompt,
                                                std::span<const PreprocessedVideo> videos);

}  // namespace qvl::image
