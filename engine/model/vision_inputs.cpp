#include "model/vision_inputs.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "model/rope_tables.h"

namespace qvl::model {

base::Status VisionInputTables::reserve(const VisionConfig& cfg, int max_patches) {
    // Not zeroed: zeroing made all of it resident at session creation (with the default
    // context, 4096 image tokens: 66 MB of peak RSS and ~35 ms before the first request), and
    // prepare() writes every row an image uses before the graph reads it.
    const std::size_t rows = std::size_t(std::max(max_patches, 0));
    QVL_ASSIGN_OR_RETURN(pos_embed_,
                         base::AlignedBuffer::allocate(rows * cfg.hidden_size * sizeof(float),
                                                       "vision position embedding table", false));
    const std::size_t rope_bytes = rows * std::size_t(cfg.head_dim() / 2) * sizeof(float);
    QVL_ASSIGN_OR_RETURN(rope_cos_,
                         base::AlignedBuffer::allocate(rope_bytes, "vision rope table", false));
    QVL_ASSIGN_OR_RETURN(rope_sin_,
                         base::AlignedBuffer::allocate(rope_bytes, "vision rope table", false));
    patch_rows_.resize(rows);
    patch_cols_.resize(rows);
    max_patches_ = max_patches;
    return base::Status();
}

VisionGraphInputs VisionInputTables::prepare(const VisionConfig& cfg, const VisionWeights& w,
                                             int grid_t, int grid_h, int grid_w,
                                             const kernels::KernelTable& kernels) {
    const int m = cfg.spatial_merge_size;
    const int n = grid_t * grid_h * grid_w;
    QVL_CHECK(n <= max_patches_ && grid_h % m == 0 && grid_w % m == 0,
              "vision grid outside the reserved tables");
    const int hidden = cfg.hidden_size;
    // The rows this image uses mapped in one call each rather than a fault per page.
    pos_embed_.populate(0, std::size_t(n) * hidden * sizeof(float));
    rope_cos_.populate(0, std::size_t(n) * (cfg.head_dim() / 2) * sizeof(float));
    rope_sin_.populate(0, std::size_t(n) * (cfg.head_dim() / 2) * sizeof(float));
    const int side = int(std::lround(std::sqrt(double(cfg.num_position_embeddings))));
    // mirrors Qwen3VLVisionModel.fast_pos_embed_interpolate: the same grid for every frame.
    const int frame = grid_h * grid_w;
    for (int t = 0; t < grid_t; ++t) {
        kernels.pos_embed_interpolate(
            {.table = w.pos_embed.data,
             .table_type = w.pos_embed.type,
             .grid_side = side,
             .dim = hidden,
             .gh = grid_h,
             .gw = grid_w,
             .merge = m,
             .out = pos_embed_.as<float>() + std::size_t(t) * frame * hidden,
             .out_stride = hidden});
    }
    // mirrors Qwen3VLVisionModel.rot_pos_emb: (row, column) of each patch in merge-window order.
    int r = 0;
    for (int t = 0; t < grid_t; ++t) {
        for (int bh = 0; bh < grid_h / m; ++bh) {
            for (int bw = 0; bw < grid_w / m; ++bw) {
                for (int mh = 0; mh < m; ++mh) {
                    for (int mw = 0; mw < m; ++mw, ++r) {
                        patch_rows_[r] = bh * m + mh;
                        patch_cols_[r] = bw * m + mw;
                    }
                }
            }
        }
    }
    vision_rope_tables(patch_rows_.data(), patch_cols_.data(), n, cfg.head_dim(), cfg.rope_theta,
                       rope_cos_.as<float>(), rope_sin_.as<float>());
    return {.n_patches = n,
            .pos_embed = pos_embed_.as<float>(),
            .rope_cos = rope_cos_.as<float>(),
            .rope_sin = rope_sin_.as<float>()};
}

VisionGraphInputs VisionInputTables::worst_case() {
    return {.n_patches = max_patches_,
            .pixel_values = pos_embed_.as<float>(),  // any buffer: only shapes matter for planning
            .pos_embed = pos_embed_.as<float>(),
            .rope_cos = rope_cos_.as<float>(),
            .rope_sin = rope_sin_.as<float>()};
}

}  // namespace qvl::model
