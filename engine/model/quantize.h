// `--weights q8`: the text decoder's linear weights quantized to int8 at load (kernels/gemm_q8.h),
// straight from the mapped checkpoint: no conversion step, no file written. The vision tower
// and the embedding table stay as stored (the lookup reads a few rows; int8 vision weights are
// known to hurt OCR). Once a matrix is quantized its source pages are handed back to the kernel
// (madvise DONTNEED on the page-aligned inside of its range), so peak RSS holds the int8 copy
// instead of the bf16 one; a tied embedding table is re-read from the file on demand.
#pragma once

#include <memory>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "kernels/gemm_q8.h"
#include "model/weights.h"

namespace qvl::model {

enum class WeightFormat { kBF16, kQ8, kQ4 };

struct QuantizeOptions {
    int block = 64;              // values per scale along k: 32, 64 or 128
    bool lm_head = true;         // quantize the output projection too (the largest decode read)
    bool release_source = true;  // madvise the quantized matrices' source pages away
    int threads = 2;             // quantization threads at load
    // 8: int8 (kernels/gemm_q8.h); 4: 4-bit groups (kernels/gemm_q4.h), except the matrices
    // kept in int8 below (with int8_block), the ones llama.cpp's Q4_K_M gives more bits.
    int bits = 8;
    bool v_int8 = false;
    bool down_int8 = false;
    bool lm_head_int8 = true;
    int int8_block = 64;
};

// `--weights q4`: 4-bit groups of 32 with half scales, the output projection (the tied
// embedding, whose error goes straight into the logits) in int8; v and down in 4 bits. Chosen
// by measurement (notes of issue 49: reconstruction error per format, logits error of the
// golden cases per choice of int8 matrices, and the decode bytes each choice reads).
inline QuantizeOptions q4_defaults() { return {.block = 32, .bits = 4}; }

// `--vision-weights q8` (opt-in): the vision tower's linear weights (every block's qkv, proj,
// fc1, fc2 and the mergers' fc1, fc2) in int8 at load, products W8A8 on the int8 kernels; the
// patch embedding, position embedding and norms stay as stored.
struct VisionQuantizeOptions {
    // 0: one scale per output channel and per activation row (kernels::q8_row_block); else a
    // block size as kernels::q8_block_ok (per-block scales on both sides).
    int block = 0;
    bool release_source = true;
    int threads = 2;
};

// Owns the quantized copies (the text decoder's, or with quantize_vision the vision tower's); the
// ModelWeights it rewrote point into it, so it must outlive them.
class QuantizedText {
  public:
    // Rewrites every text-decoder Matrix of w (q, k, v, o, gate, up, down, and lm_head when
    // options.lm_head) to WeightType::kQ8 (int8 or 4-bit, options.bits). kInvalidArgument for a
    // bad block size or bit count.
    static base::Result<std::unique_ptr<QuantizedText>> quantize(ModelWeights& w,
                                                                 const QuantizeOptions& options);
    // Rewrites the vision tower's linear matrices (VisionQuantizeOptions) to int8.
    static base::Result<std::unique_ptr<QuantizedText>> quantize_vision(
        ModelWeights& w, const VisionQuantizeOptions& options);
    std::size_t bytes() const { return bytes_; }
    WeightFormat format() const { return format_; }

    struct Group;  // matrices quantized into one buffer (model/quantize.cpp)

  private:
    // Quantizes the groups' matrices and points them at the copies.
    base::Status run(ModelWeights& w, std::vector<Group>& groups, bool release_source, int threads);

    std::vector<kernels::Q8Matrix> matrices_;  // reserved up front: addresses are stable
    std::vector<base::AlignedBuffer> storage_;
    std::size_t bytes_ = 0;
    WeightFormat format_ = WeightFormat::kQ8;
};

}  // namespace qvl::model
