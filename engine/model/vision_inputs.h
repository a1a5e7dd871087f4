// The inputs of the vision graph that depend only on an image's patch grid (spec §5.3-5.4): the
// learned position embedding bilinearly resampled to the grid, the 2-D RoPE tables, and the patch
// coordinates behind them, all in merge-window order. The buffers are sized once for the largest
// image a session accepts, so preparing an image allocates nothing; they are left unwritten, so
// only the rows an image uses become resident (4096 image tokens' tables are ~70 MB).
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "kernels/kernel_table.h"
#include "model/config.h"
#include "model/vision_encoder.h"
#include "model/weights.h"

namespace qvl::model {

class VisionInputTables {
  public:
    // Sizes the tables for images of up to max_patches patches (all frames).
    base::Status reserve(const VisionConfig& cfg, int max_patches);
    int max_patches() const { return max_patches_; }

    // Fills the tables for a grid_t x grid_h x grid_w patch grid (grid_h and grid_w multiples of
    // the merge size, grid_t * grid_h * grid_w <= max_patches(); the caller checked both) and
    // returns the graph inputs that point at them; the caller adds the pixels (rgb or
    // pixel_values).
    VisionGraphInputs prepare(const VisionConfig& cfg, const VisionWeights& w, int grid_t,
                              int grid_h, int grid_w, const kernels::KernelTable& kernels);

    // Graph inputs for the largest image, for reserving the activation arena (tables unfilled).
    VisionGraphInputs worst_case();

  private:
    int max_patches_ = 0;
    base::AlignedBuffer pos_embed_;  // float [max_patches, hidden]
    base::AlignedBuffer rope_cos_;   // float [max_patches, head_dim / 2]
    base::AlignedBuffer rope_sin_;
    std::vector<std::int32_t> patch_rows_, patch_cols_;  // [max_patches]
};

}  // namespace qvl::model
