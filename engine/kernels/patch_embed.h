// Fused vision patch embedding: from the resized RGB image straight to [n_patches, out_dim]
// = patchify(normalise(image)) · wᵀ + bias, without materialising the [n_patches, 3·T·P·P]
// pixel matrix: the GEMM's A-packing gathers pixels (through the 256-entry normalisation table)
// as it goes. Rows are in the 2x2 merge-window order of Qwen3-VL's processor,
//   row r = ((bh·(gw/merge) + bw)·merge + mh)·merge + mw,  patch (ph, pw) = (bh·merge + mh,
//   bw·merge + mw) col k = ((c·temporal + t)·patch + iy)·patch + ix,       value
//   lut[rgb[(ph·patch+iy, pw·patch+ix), c]]
// and every temporal frame is the same still image.
//
// Contract: rgb is height x width x 3 bytes (HWC, row stride width·3); height and width are
// multiples of patch·merge (the resize guarantees it). w is [out_dim, 3·temporal·patch²] of
// w_type with row stride ldw (elements), any alignment; bias [out_dim] or null; out
// [n_patches, out_dim] with row stride ld_out, n_patches = (height/patch)·(width/patch); out
// must not overlap the inputs. Numerics as GEMM (f32 sums; kBF16 rounds the pixels and f32
// weights to bf16). Tasks split output tiles exactly as GEMM does: bit-identical for any thread
// count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gemm.h"

namespace qvl::kernels {

struct PatchEmbedArgs {
    const std::uint8_t* rgb = nullptr;
    int height = 0, width = 0;  // resized image, HWC
    int patch = 16, temporal = 2, merge = 2;
    const float* lut = nullptr;  // 256 normalised values, one per byte value
    const void* w = nullptr;
    WeightType w_type = WeightType::kBF16;
    std::ptrdiff_t ldw = 0;  // [out, 3*temporal*patch*patch]
    const float* bias = nullptr;
    float* out = nullptr;
    std::ptrdiff_t ld_out = 0;
    int out_dim = 0;
    GemmPrecision precision = GemmPrecision::kF32;
};

int patch_embed_n_patches(const PatchEmbedArgs& args);
int patch_embed_k(const PatchEmbedArgs& args);  // 3 * temporal * patch * patch

// Same task protocol as gemm_num_tasks; the tasks run through KernelTable::patch_embed_task.
int patch_embed_num_tasks(const PatchEmbedArgs& args, int n_threads);

}  // namespace qvl::kernels
