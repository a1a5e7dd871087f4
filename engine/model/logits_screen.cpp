#include "model/logits_screen.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/bf16.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "kernels/isa.h"

namespace qvl::model {
namespace {

constexpr double kU = 1.0 / 16777216.0;  // 2^-24, the unit roundoff of f32
// Norms are computed in double from exact values: a relative margin far above their rounding.
constexpr double kNormMargin = 1.0 + 1e-9;

float round_up(double v) {
    const float f = float(v * kNormMargin);
    return double(f) >= v ? f : std::nextafter(f, INFINITY);
}

}  // namespace

base::Result<std::unique_ptr<LogitsScreen>> LogitsScreen::build(const Matrix& lm_head, int block,
                                                                int threads) {
    if (lm_head.type != kernels::WeightType::kBF16 || lm_head.data == nullptr ||
        !kernels::q8_block_ok(block)) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "logits screen: {} must be a bf16 matrix (block {})", lm_head.name,
                           block);
    }
    auto out = std::unique_ptr<LogitsScreen>(new LogitsScreen());
    const int rows = lm_head.rows, cols = lm_head.cols;
    const std::size_t qbytes = kernels::q8_data_bytes(rows, cols, block);
    const std::size_t sbytes = kernels::q8_scale_bytes(rows, cols, block);
    const std::size_t nbytes = (sizeof(float) * std::size_t(rows) + 63) / 64 * 64;
    QVL_ASSIGN_OR_RETURN(out->storage_, base::AlignedBuffer::allocate(qbytes + sbytes + 2 * nbytes,
                                                                      "logits screen", false));
    // Huge pages for the same reason as the int8 decoder weights (model/quantize.cpp): every
    // decode step streams all of it.
    base::advise_huge_pages(out->storage_.data(), out->storage_.size());
    std::byte* base = out->storage_.data();
    out->q8_ = kernels::q8_describe(rows, cols, block, reinterpret_cast<std::int8_t*>(base),
                                    reinterpret_cast<float*>(base + qbytes));
    auto* error = reinterpret_cast<float*>(base + qbytes + sbytes);
    auto* norm = reinterpret_cast<float*>(base + qbytes + sbytes + nbytes);
    out->error_ = error;
    out->norm_ = norm;

    const kernels::Q8Matrix& m = out->q8_;
    const kernels::Isa isa = kernels::best_isa();
    // Sums of squares per row from the quantizer itself (it holds each row's exact values and
    // their int8 rounding), in double, then the norms rounded up.
    std::vector<double> squares(3 * std::size_t(rows));
    const kernels::Q8RowSquares sq{.error = squares.data(),
                                   .source = squares.data() + rows,
                                   .dequantized = squares.data() + 2 * std::size_t(rows)};
    const int chunks = std::min(m.panels, 64);  // a fixed split: the bits do not depend on threads
    base::ThreadPool pool(std::max(threads, 1));
    pool.parallel_for(chunks, [&](int c) {
        const int p0 = int(std::int64_t(m.panels) * c / chunks);
        const int p1 = int(std::int64_t(m.panels) * (c + 1) / chunks);
        kernels::q8_quantize_panels(lm_head.data, lm_head.type, lm_head.ld, m, p0, p1, isa, &sq);
        for (int n = p0 * kernels::kQ8Panel; n < std::min(rows, p1 * kernels::kQ8Panel); ++n) {
            error[n] = round_up(std::sqrt(sq.error[n]));
            norm[n] = round_up(std::sqrt(std::max(sq.source[n], sq.dequantized[n])));
        }
    });
    return out;
}

std::size_t LogitsScreen::scratch_floats() const {
    // int8 row (k_blocks * block bytes), scales and sums (k_blocks each)
    return std::size_t(q8_.k_blocks) * (std::size_t(q8_.block) / 4 + 2);
}

ScreenRowBound LogitsScreen::prepare_row(const float* x, kernels::GemmPrecision precision,
                                         float* xt, float* scratch) const {
    const int k = q8_.cols;
    for (int i = 0; i < k; ++i) {
        xt[i] = precision == kernels::GemmPrecision::kBF16 ? base::round_to_bf16(x[i]) : x[i];
    }
    auto* q = reinterpret_cast<std::int8_t*>(scratch);
    float* d = scratch + std::size_t(q8_.k_blocks) * q8_.block / 4;
    auto* sums = reinterpret_cast<std::int32_t*>(d + q8_.k_blocks);
    kernels::q8_quantize_row(xt, k, q8_.block, q, d, sums);
    double nx = 0, ndx = 0, nxq = 0;
    for (int i = 0; i < k; ++i) {
        const double v = xt[i];
        const double vq = double(q[i]) * double(d[i / q8_.block]);
        nx += v * v;
        ndx += (vq - v) * (vq - v);
        nxq += vq * vq;
    }
    nx = std::sqrt(nx) * kNormMargin;
    ndx = std::sqrt(ndx) * kNormMargin;
    nxq = std::sqrt(nxq) * kNormMargin;
    // See the header: beta multiplies max(|W_n|, |W^_n|), so the two rounding terms share it.
    return {.alpha = nx,
            .beta = ndx + (2.0 * k + 4.0) * kU * nx + (double(q8_.k_blocks) + 4.0) * kU * nxq};
}

void LogitsScreen::bounds(const ScreenRowBound& b, const float* s, float* lower,
                          float* upper) const {
    // In float, widened for its own rounding: the product and sum below err by at most 3 ulps
    // (2^-18 covers them), and S -/+ B rounds by at most half an ulp of |S| + B (|S|·2^-22 and
    // the 2^-18 again cover that).
    const float alpha = float(b.alpha * (1.0 + 1e-6));
    const float beta = float(b.beta * (1.0 + 1e-6));
    constexpr float kWiden = 1.0f + 1.0f / 262144.0f;
    constexpr float kRel = 1.0f / 4194304.0f;
    constexpr float kAbs = 1e-30f;
    for (int n = 0; n < q8_.rows; ++n) {
        const float bound =
            (alpha * error_[n] + beta * norm_[n]) * kWiden + std::fabs(s[n]) * kRel + kAbs;
        lower[n] = s[n] - bound;
        upper[n] = s[n] + bound;
    }
}

}  // namespace qvl::model
