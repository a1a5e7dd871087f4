// The Qwen3-VL position tables fed to kernels/rope.h: the text decoder's interleaved MRoPE and
// the vision tower's 2-D RoPE. Angles and their cos/sin are computed in double and rounded once
// to f32, so the tables are as exact as f32 storage allows.
#pragma once

#include <cstdint>

namespace qvl::model {

// Text interleaved MRoPE tables (spec 7.2): inv_freq[k] = theta^(-2k/head_dim) for
// k < half = head_dim/2; token n uses position p = pos_h[n] when k % 3 == 1 && k < 3 *
// mrope_section[1], p = pos_w[n] when k % 3 == 2 && k < 3 * mrope_section[2], else p = pos_t[n];
// cos[n * half + k] = cos(p * inv_freq[k]) (sin likewise). cos, sin: [n_tokens, half] dense.
void text_mrope_tables(const std::int32_t* pos_t, const std::int32_t* pos_h,
                       const std::int32_t* pos_w, int n_tokens, int head_dim, double theta,
                       const int mrope_section[3], float* cos, float* sin);

// Vision 2D RoPE tables (spec 5.4): with quarter = head_dim/4 and
// inv_freq[k] = theta^(-2k/(head_dim/2)) for k < quarter, patch n gets angles
// a[k] = rows[n] * inv_freq[k] and a[quarter + k] = cols[n] * inv_freq[k];
// cos[n * half + j] = cos(a[j]) for j < half = head_dim/2 (sin likewise). Dense [n_patches, half].
// head_dim divisible by 4. rows/cols are patch coordinates in merge-window order.
void vision_rope_tables(const std::int32_t* rows, const std::int32_t* cols, int n_patches,
                        int head_dim, double theta, float* cos, float* sin);

}  // namespace qvl::model
