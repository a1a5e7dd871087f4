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

enum class WeightFormat { kBF16, kQ8 };

struct QuantizeOptions {
    int block = 64;              // values per scale along k: 32, 64 or 128
    bool lm_head = true;         // quantize the output projection too (the largest decode read)
    bool release_source = true;  // madvise the quantized matrices' source pages away
    int threads = 2;             // quantization threads at load
};

// Owns the int8 copies; the ModelWeights it rewrote point into it, so it must outlive them.
class QuantizedText {
  public:
    // Rewrites every text-decoder Matrix of w (q, k, v, o, gate, up, down, and lm_head when
    // options.lm_head) to WeightType::kQ8. kInvalidArgument for a bad block size.
    static base::Result<std::unique_ptr<QuantizedText>> quantize(ModelWeights& w,
                                                                 const QuantizeOptions& options);
    std::size_t bytes() const { return bytes_; }

  private:
    std::vector<kernels::Q8Matrix> matrices_;  // reserved up front: addresses are stable
    std::vector<base::AlignedBuffer> storage_;
    std::size_t bytes_ = 0;
};

}  // namespace qvl::model
