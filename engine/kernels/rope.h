// Rotary position embedding, rotate_half (NeoX) pairing: within each head, element i pairs with
// i + head_dim/2. Used by the vision tower (2D RoPE, spec 5.4) and the text decoder (interleaved
// MRoPE, spec 7.2); both reduce to "apply per-row cos/sin tables". The tables are the model's
// business (model/rope_tables.h builds them once per step).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::kernels {

// In place, for every row r < rows, head h < n_heads and i < half = head_dim / 2, with
// x_h = x + r * x_stride + h * head_dim, c = cos[r * cs_stride + i], s = sin[r * cs_stride + i]:
//   x_h'[i]        = x_h[i] * c - x_h[i + half] * s
//   x_h'[i + half] = x_h[i + half] * c + x_h[i] * s
// head_dim even; x_stride >= n_heads * head_dim (elements); cos/sin: [rows, half] with row
// stride cs_stride (>= half). No alignment required.
struct RopeArgs {
    float* x = nullptr;
    std::ptrdiff_t x_stride = 0;
    int rows = 0;
    int n_heads = 0;
    int head_dim = 0;
    const float* cos = nullptr;
    const float* sin = nullptr;
    std::ptrdiff_t cs_stride = 0;
};
// Entry: KernelTable::rope_f32 (kernels/kernel_table.h).

namespace ref {
void rope_f32(const RopeArgs& args);
}  // namespace ref

}  // namespace qvl::kernels
