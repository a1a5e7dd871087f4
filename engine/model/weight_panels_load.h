// The model's bf16 linear-layer matrices rearranged at load into the panel layout of
// kernels/weight_panels.h, straight from the mapped checkpoint (no conversion step, no file
// written). With it every product of the text decoder, decode step or prefill, reads its weights
// in order without packing, and a row's result is the same whatever m (the streaming and packed
// paths share one chain of operations); the vision tower's products pack their weights without
// transposes. The patch embedding (it gathers pixels through the stored layout) and the
// embedding lookup (it reads stored rows) keep the stored layout.
// As with int8 weights (model/quantize.h), each source matrix's pages are handed back to the
// kernel once rearranged, so resident memory holds one copy.
#pragma once

#include <memory>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "model/weights.h"

namespace qvl::model {

class PanelWeights {
  public:
    // Rewrites every bf16 linear-layer Matrix of w (text: q, k, v, o, gate, up, down, lm_head;
    // vision: qkv, proj, fc1, fc2 of each block, the merger's and each deepstack merger's fc1 and
    // fc2) to WeightType::kBF16Panels (ld = k pairs); f32 and int8 matrices stay as they are,
    // and lm_head when !lm_head (a logits screen reads a few of its rows, model/logits_screen.h).
    // threads: workers for the rearrangement (panels are independent, so the result does not
    // depend on them).
    static base::Result<std::unique_ptr<PanelWeights>> rearrange(ModelWeights& w, int threads,
                                                                 bool release_source = true,
                                                                 bool lm_head = true);
    std::size_t bytes() const { return storage_.size(); }

  private:
    base::AlignedBuffer storage_;  // every matrix's panels, back to back (64-byte aligned)
};

}  // namespace qvl::model
