// Element types shared by kernel contracts.
#pragma once

namespace qvl::kernels {

// How a weight matrix is stored. Checkpoint matrices are bf16 and used in place (mmap);
// f32 is for small or converted weights (f16 checkpoints are widened at load) and tests.
// kQ8: int8 weights quantized at load; the pointer is a const Q8Matrix* (kernels/gemm_q8.h).
// kBF16Panels: bf16 weights rearranged at load into 16-output panels of k pairs
// (kernels/weight_panels.h), the layout every tier's micro-kernel reads without transposing.
enum class WeightType { kF32, kBF16, kQ8, kBF16Panels };

}  // namespace qvl::kernels
