#include "model/vision_inputs.h"

#include <cmath>

#include "base/check.h"
#include "model/rope_tables.h"

namespace qvl::model {

void VisionInputTables::reserve(const VisionConfig& cfg, int max_patches) {
    max_patches_ = max_patches;
    pos_embed_.resize(std::size_t(max_patches) * cfg.hidden_size);
    rope_cos_.resize(std::size_t(max_patches) * cfg.head_dim() / 2);
    rope_sin_.resize(rope_cos_.size());
    patch_rows_.resize(max_patches);
    patch_cols_.resize(max_patches);
}

VisionGraphInputs VisionInputTables::prepare(const VisionConfig& cfg, const VisionWeights& w,
                                             int grid_t, int grid_h, int grid_w,
                                             const kernels::KernelTable& kernels) {
    const int m = cfg.spatial_merge_size;
    const int n = grid_t * grid_h * grid_w;
    QVL_CHECK(n <= max_patches_ && grid_h % m == 0 && grid_w % m == 0,
              "vision grid outside the reserved tables");
    const int hidden = cfg.hidden_size;
    const int side = int(std::lround(std::sqrt(double(cfg.num_position_embeddings))));
    // mirrors Qwen3VLVisionModel.fast_pos_embed_interpolate: the same grid for every frame.
    const int frame = grid_h * grid_w;
    for (int t = 0; t < grid_t; ++t) {
        kernels.pos_embed_interpolate({.table = w.pos_embed.data,
                                       .table_type = w.pos_embed.type,
                                       .grid_side = side,
                                       .dim = hidden,
                                       .gh = grid_h,
                                       .gw = grid_w,
                                       .merge = m,
                                       .out = pos_embed_.data() + std::size_t(t) * frame * hidden,
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
                       rope_cos_.data(), rope_sin_.data());
    return {.n_patches = n,
            .pos_embed = pos_embed_.data(),
            .rope_cos = rope_cos_.data(),
            .rope_sin = rope_sin_.data()};
}

VisionGraphInputs VisionInputTables::worst_case() {
    return {.n_patches = max_patches_,
            .pixel_values = pos_embed_.data(),  // any buffer: only shapes matter for planning
            .pos_embed = pos_embed_.data(),
            .rope_cos = rope_cos_.data(),
            .rope_sin = rope_sin_.data()};
}

}  // namespace qvl::model
