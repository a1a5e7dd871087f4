// The vision tower as a graph (spec §5): patch embedding, learned position embedding, 2-D
// RoPE, the ViT blocks, the deepstack mergers after deepstack_visual_indexes and the final
// merger. One graph per image, so attention never crosses images.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/builder.h"
#include "model/config.h"
#include "model/weights.h"

namespace qvl::model {

struct VisionGraphInputs {
    int n_patches = 0;                  // rows, in merge-window order
    float* pixel_values = nullptr;      // [n_patches, 3 * t * p * p], or null with rgb:
    const std::uint8_t* rgb = nullptr;  // the resized image (HWC) for the fused patch embedding
    int image_height = 0, image_width = 0;
    const float* lut = nullptr;  // [256] normalised value of each byte
    float* pos_embed = nullptr;  // [n_patches, hidden] interpolated, merge-window order
    float* rope_cos = nullptr;   // [n_patches, head_dim / 2]
    float* rope_sin = nullptr;
};

struct VisionGraphOutputs {
    graph::Tensor image_embeds;            // [n_patches / merge², out_hidden]
    std::vector<graph::Tensor> deepstack;  // one per deepstack index, same shape
};

VisionGraphOutputs build_vision_graph(graph::GraphBuilder& g, const VisionConfig& cfg,
                                      const VisionWeights& w, const VisionGraphInputs& in);

inline graph::WeightRef weight_ref(const Matrix& m) {
    return {.data = m.data, .type = m.type, .ld = m.ld, .rows = m.rows, .cols = m.cols};
}

}  // namespace qvl::model
