// Learned absolute position embedding of the vision tower, bilinearly resampled to the patch
// grid (HF fast_pos_embed_interpolate) and written in merge-window order (see patch_embed.h).
//
// The table is [grid_side * grid_side, dim] (row index r * grid_side + c), f32 or bf16. The
// image grid gh x gw (both multiples of merge) samples rows hs[r] = r * (grid_side - 1) / (gh - 1)
// (align corners; the last sample is exactly grid_side - 1; gh == 1 samples row 0), columns
// likewise, as numpy.linspace does. With f = floor, the four neighbours
// (f, min(f + 1, side - 1)) are blended with weights (1-dh)(1-dw), (1-dh)dw, dh(1-dw), dh dw,
// computed in double and accumulated in f32 (no bf16 roundings).
// Output row of raster position (r, c):
//   ((r / merge) * (gw / merge) + c / merge) * merge^2 + (r % merge) * merge + c % merge
// out: [gh * gw, dim] with row stride out_stride (elements, >= dim). For video (t > 1) the
// caller repeats the block. No alignment required.
#pragma once

#include <cstddef>

#include "kernels/types.h"

namespace qvl::kernels {

struct PosEmbedArgs {
    const void* table = nullptr;
    WeightType table_type = WeightType::kF32;
    int grid_side = 0;  // sqrt(num_position_embeddings), 48 for Qwen3-VL
    int dim = 0;
    int gh = 0;
    int gw = 0;
    int merge = 0;
    float* out = nullptr;
    std::ptrdiff_t out_stride = 0;
};
// Entry: KernelTable::pos_embed_interpolate (kernels/kernel_table.h).

namespace ref {
void pos_embed_interpolate(const PosEmbedArgs& args);
}  // namespace ref

}  // namespace qvl::kernels
