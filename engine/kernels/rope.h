// Rotary position embedding, rotate_half (NeoX) pairing: within each head, element i pairs with
// i + head_dim/2. Used by the vision tower (2D RoPE) and the text decoder (interleaved MRoPE); both
// reduce to "apply per-row cos/sin tables", built once per step by the table builders below
// (computed in double, stored f32).
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

// Text interleaved MRoPE tables (Qwen3-VL, HF apply_interleaved_mrope): inv_freq[k] =
// theta^(-2k/head_dim) for k < half = head_dim/2; token n uses position p = pos_h[n] when k % 3 ==
// 1 && k < 3 * mrope_section[1], p = pos_w[n] when k % 3 == 2 && k < 3 * mrope_section[2], else p =
// pos_t[n]; cos[n * half + k] = cos(p * inv_freq[k]) (sin likewise). cos, sin: [n_tokens, half]
// dense.
void text_mrope_tables(const std::int32_t* pos_t, const std::int32_t* pos_h,
                       const std::int32_t* pos_w, int n_tokens, int head_dim, double theta,
                       const int mrope_section[3], float* cos, float* sin);

// Vision 2D RoPE tables (Qwen3-VL vision rotary embedding): with quarter = head_dim/4 and
// inv_freq[k] = theta^(-2k/(head_dim/2)) for k < quarter, patch n gets angles
// a[k] = rows[n] * inv_freq[k] and a[quarter + k] = cols[n] * inv_freq[k];
// cos[n * half + j] = cos(a[j]) for j < half = head_dim/2 (sin likewise). Dense [n_patches, half].
// head_dim divisible by 4. rows/cols are patch coordinates in merge-window order.
void vision_rope_tables(const std::int32_t* rows, const std::int32_t* cols, int n_patches,
                        int head_dim, double theta, float* cos, float* sin);

namespace ref {
void rope_f32(const RopeArgs& args);
}  // namespace ref

}  // namespace qvl::kernels
