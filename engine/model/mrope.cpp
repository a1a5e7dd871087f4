#include "model/mrope.h"

#include <algorithm>

namespace qvl::model {

namespace {

// One kind of visual token (image or video pad) and the grids its runs take, in order.
struct VisualRuns {
    std::int32_t token;
    std::span<const ImageGrid> grids;
    const char* what;  // "image" or "video frame"
    std::size_t used = 0;
};

// Positions for the run of r->token starting at ids[i]; returns the index after it.
base::Result<std::size_t> place_run(std::span<const std::int32_t> ids, std::size_t i, VisualRuns* r,
                                    std::int64_t* next, RopePositions* pos) {
    const std::size_t n = ids.size();
    if (r->used >= r->grids.size()) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "prompt has more {}-token runs than the {} {}s given", r->what,
                           r->grids.size(), r->what);
    }
    const ImageGrid& g = r->grids[r->used++];
    const std::size_t count = std::size_t(g.t) * g.h * g.w;
    if (i + count > n || (i + count < n && ids[i + count] == r->token) ||
        !std::all_of(ids.begin() + std::ptrdiff_t(i), ids.begin() + std::ptrdiff_t(i + count),
                     [&](std::int32_t id) { return id == r->token; })) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "{} {} needs a run of {} {} tokens at index {}", r->what, r->used - 1,
                           count, r->what, i);
    }
    const std::int64_t s = *next;
    std::int64_t max_pos = s;
    for (int tt = 0; tt < g.t; ++tt) {
        for (int row = 0; row < g.h; ++row) {
            for (int col = 0; col < g.w; ++col) {
                pos->t[i] = std::int32_t(s + tt);
                pos->h[i] = std::int32_t(s + row);
                pos->w[i] = std::int32_t(s + col);
                max_pos = std::max({max_pos, s + tt, s + row, s + col});
                ++i;
            }
        }
    }
    *next = max_pos + 1;
    return i;
}

}  // namespace

// mirrors Qwen3VLModel.get_rope_index (one unpadded sequence)
base::Result<RopePositions> compute_rope_positions(std::span<const std::int32_t> ids,
                                                   std::span<const ImageGrid> images,
                                                   std::int32_t image_token_id,
                                                   std::span<const ImageGrid> video_frames,
                                                   std::int32_t video_token_id) {
    RopePositions pos;
    const std::size_t n = ids.size();
    pos.t.resize(n);
    pos.h.resize(n);
    pos.w.resize(n);
    VisualRuns image_runs{image_token_id, images, "image"};
    VisualRuns video_runs{video_token_id, video_frames, "video frame"};
    std::int64_t next = 0;  // max position so far + 1
    for (std::size_t i = 0; i < n;) {
        VisualRuns* runs = ids[i] == image_token_id                            ? &image_runs
                           : !video_frames.empty() && ids[i] == video_token_id ? &video_runs
                                                                               : nullptr;
        if (runs == nullptr) {
            pos.t[i] = pos.h[i] = pos.w[i] = std::int32_t(next);
            ++next;
            ++i;
            continue;
        }
        QVL_ASSIGN_OR_RETURN(i, place_run(ids, i, runs, &next, &pos));
    }
    for (const VisualRuns* r : {&image_runs, &video_runs}) {
        if (r->used != r->grids.size()) {
            return base::error(base::ErrorCode::kInvalidArgument,
                               "{} {}s given but the prompt has {} {}-token runs", r->grids.size(),
                               r->what, r->used, r->what);
        }
    }
    pos.rope_delta = next - std::int64_t(n);
    return pos;
}

base::Result<RopePositions> compute_rope_positions(std::span<const std::int32_t> ids,
                                                   std::span<const ImageGrid> images,
                                                   std::int32_t image_token_id) {
    return compute_rope_positions(ids, images, image_token_id, {}, image_token_id);
}

std::vector<ImageGrid> split_video_grid(const ImageGrid& video) {
    return std::vector<ImageGrid>(std::size_t(std::max(video.t, 0)), {1, video.h, video.w});
}

}  // namespace qvl::model
