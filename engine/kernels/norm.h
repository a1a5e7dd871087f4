// Row normalizations: LayerNorm (vision blocks and mergers) and RMSNorm (text decoder, and the
// per-head q_norm/k_norm, which is rms_norm_f32 over rows * n_heads rows of head_dim).
//
// x, y: [rows, dim] f32 with row strides in elements (>= dim); w, b: [dim] f32. Rows are
// independent. y may equal x (in place, same stride); no other overlap. No alignment required.
// Statistics are accumulated in f32 or wider (the reference uses double). rows, dim >= 0.
// Entries: KernelTable::layer_norm_f32 / rms_norm_f32 (kernels/kernel_table.h).
#pragma once

#include <cstddef>

namespace qvl::kernels {

// y[r, i] = (x[r, i] - mean_r) / sqrt(var_r + eps) * w[i] + b[i], var_r biased (divides by dim).
struct LayerNormArgs {
    const float* x = nullptr;
    std::ptrdiff_t x_stride = 0;
    const float* w = nullptr;
    const float* b = nullptr;
    float* y = nullptr;
    std::ptrdiff_t y_stride = 0;
    int rows = 0;
    int dim = 0;
    float eps = 0.0f;
};

// y[r, i] = x[r, i] * w[i] / sqrt(mean_i(x[r, :]^2) + eps).
struct RmsNormArgs {
    const float* x = nullptr;
    std::ptrdiff_t x_stride = 0;
    const float* w = nullptr;
    float* y = nullptr;
    std::ptrdiff_t y_stride = 0;
    int rows = 0;
    int dim = 0;
    float eps = 0.0f;
};

namespace ref {
void layer_norm_f32(const LayerNormArgs& args);
void rms_norm_f32(const RmsNormArgs& args);
}  // namespace ref

}  // namespace qvl::kernels
