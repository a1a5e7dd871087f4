// Element types shared by kernel contracts.
#pragma once

namespace qvl::kernels {

// How a weight matrix is stored. Checkpoint matrices are bf16 and used in place (mmap);
// f32 is for small or converted weights (f16 checkpoints are widened at load) and tests.
// kQ8: int8 weights quantized at load; the pointer is a const Q8Matrix* (kernels/gemm_q8.h).
enum class WeightType { kF32, kBF16, kQ8 };

}  // namespace qvl::kernels
