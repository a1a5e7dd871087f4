// Three-axis (t, h, w) rotary positions for a prompt mixing text and images, as
// Qwen3VLModel.get_rope_index computes them (spec §7.1): text advances by one; an image's
// merged (gh/m x gw/m) token grid starting at s gets (s, s + row, s + col); the text after it
// continues at max(position) + 1. rope_delta = max(position) + 1 - n_tokens; a decode token
// at cache index c uses c + rope_delta on all three axes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace qvl::model {

struct ImageGrid {
    int t = 1;
    int h = 0;  // merged token rows (patch rows / merge)
    int w = 0;  // merged token cols
};

struct RopePositions {
    std::vector<std::int32_t> t, h, w;  // [n_tokens] each
    std::int64_t rope_delta = 0;
};

// ids: the expanded prompt; images: one grid per run of image_token_id, in order.
// A run whose length differs from t*h*w, or a count mismatch, is kInvalidArgument.
base::Result<RopePositions> compute_rope_positions(std::span<const std::int32_t> ids,
                                                   std::span<const ImageGrid> images,
                                                   std::int32_t image_token_id);

// Images and videos in one prompt: runs of image_token_id take `images` in order, runs of
// video_token_id take `video_frames` in order. Qwen3-VL's get_rope_index splits each video grid
// into grid_t grids of t = 1 (the timestamp text between a video's temporal patches separates
// their runs), so video_frames holds one such grid per temporal patch (split_video_grid).
base::Result<RopePositions> compute_rope_positions(std::span<const std::int32_t> ids,
                                                   std::span<const ImageGrid> images,
                                                   std::int32_t image_token_id,
                                                   std::span<const ImageGrid> video_frames,
                                                   std::int32_t video_token_id);

// A video's grid as get_rope_index uses it: video.t grids of {1, h, w}.
std::vector<ImageGrid> split_video_grid(const ImageGrid& video);

}  // namespace qvl::model
