// The logits screen: an int8 copy of a bf16 lm_head that bounds every logit, so that a sampler
// which only needs the largest few (greedy, top-k) can compute exactly those and skip the rest.
//
// Why: the tied lm_head of the 2B model is 151936 x 2048 bf16, 622 MB of the 3.44 GB a bf16
// decode step reads (18 %). Its int8 copy is half that. A decode step then reads the int8 copy,
// picks the ids whose bound reaches the k-th best lower bound, and computes only those rows in
// bf16 with the same GEMM as the full product, so their logits are the same bits and the chosen
// token is exactly the one the full logits give (runtime/sampler.h: screen_candidates).
//
// The bound (for one row x, output n; k inputs, kb blocks; u = 2^-24). Let x~ be what the exact
// product multiplies (x rounded to bf16 for GemmPrecision::kBF16, x itself for kF32), L_n the
// exact product's value, S_n the int8 product of x~ (kernels/gemm_q8.h), x^ and W^ the
// dequantized int8 operands. Then
//   |S_n - L_n| <= |x~|·|W_n - W^_n|                (weight rounding, Cauchy-Schwarz)
//               +  |x^ - x~|·|W^_n|                  (activation rounding)
//               +  (2k + 4)·u·|x~|·|W_n|             (f32 sums of the exact product, any order)
//               +  (kb + 4)·u·|x^|·|W^_n|            (f32 sums of the block products)
//               +  1e-30                             (flushed denormals)
// with Euclidean norms; the weight norms are computed at load (rounded up), the activation
// norms per row. The bound is rigorous, not statistical: it holds for every x.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "kernels/gemm.h"
#include "kernels/gemm_q8.h"
#include "model/weights.h"

namespace qvl::model {

// Values per int8 scale along k of the screen's copy (the int8 decoder's default,
// kernels/gemm_q8.h).
inline constexpr int kLogitsScreenBlock = 64;

// The activation side of one row's bound: B_n = alpha·weight_error[n] + beta·weight_norm[n],
// then widened for the float arithmetic that applies it (LogitsScreen::bounds).
struct ScreenRowBound {
    double alpha = 0.0;
    double beta = 0.0;
};

class LogitsScreen {
  public:
    // Quantizes lm_head (bf16 [vocab, hidden], row stride ld) with blocks of `block` and
    // measures its row norms; `threads` workers. kInvalidArgument for another weight type.
    static base::Result<std::unique_ptr<LogitsScreen>> build(const Matrix& lm_head, int block,
                                                             int threads);

    const kernels::Q8Matrix& matrix() const { return q8_; }
    int rows() const { return q8_.rows; }
    int cols() const { return q8_.cols; }
    std::size_t bytes() const { return storage_.size(); }

    // Writes x~ (x rounded as `precision` rounds it; [k] floats, what the int8 product must
    // read) to xt and returns the row's bound terms. Allocates nothing; scratch holds
    // scratch_floats() floats.
    ScreenRowBound prepare_row(const float* x, kernels::GemmPrecision precision, float* xt,
                               float* scratch) const;
    std::size_t scratch_floats() const;
    // lower[n] <= L_n <= upper[n] for n < rows(), from the int8 products s[0, rows()).
    void bounds(const ScreenRowBound& b, const float* s, float* lower, float* upper) const;
    // Exact per-row norms, for tests: |W^_n - W_n| and max(|W_n|, |W^_n|), rounded up.
    std::span<const float> weight_error() const { return {error_, std::size_t(q8_.rows)}; }
    std::span<const float> weight_norm() const { return {norm_, std::size_t(q8_.rows)}; }

  private:
    LogitsScreen() = default;

    base::AlignedBuffer storage_;  // int8 panels, scales, then the two norm arrays
    kernels::Q8Matrix q8_;
    const float* error_ = nullptr;
    const float* norm_ = nullptr;
};

}  // namespace qvl::model
