#include "model/mrope.h"

#include <algorithm>

namespace qvl::model {

// mirrors Qwen3VLModel.get_rope_index (one unpadded sequence, images only)
base::Result<RopePositions> compute_rope_positions(std::span<const std::int32_t> ids,
                                                   std::span<const ImageGrid> images,
                                                   std::int32_t image_token_id) {
    RopePositions pos;
    const std::size_t n = ids.size();
    pos.t.resize(n);
    pos.h.resize(n);
    pos.w.resize(n);
    std::int64_t next = 0;  // max position so far + 1
    std::size_t i = 0;
    std::size_t image = 0;
    while (i < n) {
        if (ids[i] != image_token_id) {
            pos.t[i] = pos.h[i] = pos.w[i] = std::int32_t(next);
            ++next;
            ++i;
            continue;
        }
        if (image >= images.size()) {
            return base::error(base::ErrorCode::kInvalidArgument,
                               "prompt has more image-token runs than the {} images given",
                               images.size());
        }
        const ImageGrid& g = images[image++];
        const std::size_t count = std::size_t(g.t) * g.h * g.w;
        if (i + count > n || (i + count < n && ids[i + count] == image_token_id) ||
            !std::all_of(ids.begin() + i, ids.begin() + i + count,
                         [&](std::int32_t id) { return id == image_token_id; })) {
            return base::error(base::ErrorCode::kInvalidArgument,
                               "image {} needs a run of {} image tokens at index {}", image - 1,
                               count, i);
        }
        const std::int64_t s = next;
        std::int64_t max_pos = s;
        for (int tt = 0; tt < g.t; ++tt) {
            for (int r = 0; r < g.h; ++r) {
                for (int c = 0; c < g.w; ++c) {
                    pos.t[i] = std::int32_t(s + tt);
                    pos.h[i] = std::int32_t(s + r);
                    pos.w[i] = std::int32_t(s + c);
                    max_pos = std::max({max_pos, s + tt, s + r, s + c});
                    ++i;
                }
            }
        }
        next = max_pos + 1;
    }
    if (image != images.size()) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "{} images given but the prompt has {} image-token runs", images.size(),
                           image);
    }
    pos.rope_delta = next - std::int64_t(n);
    return pos;
}

}  // namespace qvl::model
