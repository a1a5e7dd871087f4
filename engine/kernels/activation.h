// Elementwise activations over n contiguous f32 values. y may equal any input (in place); no
// other overlap. No alignment required; n >= 0. Results are within a few ulp of the exact
// function (the reference evaluates in double).
#pragma once

#include <cstdint>

namespace qvl::kernels {

// Entries of KernelTable (kernels/kernel_table.h), and their references:
//   gelu_tanh_f32(x, y, n): y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (vision MLP)
//   gelu_erf_f32(x, y, n):  y = 0.5 x (1 + erf(x / sqrt(2)))        (mergers, exact nn.GELU)
//   silu_mul_f32(gate, up, y, n): y = gate / (1 + exp(-gate)) * up  (text MLP, SiLU times up)
//   add_f32(a, b, y, n):    y = a + b                                (residual adds)
namespace ref {
void gelu_tanh_f32(const float* x, float* y, std::int64_t n);
void gelu_erf_f32(const float* x, float* y, std::int64_t n);
void silu_mul_f32(const float* gate, const float* up, float* y, std::int64_t n);
void add_f32(const float* a, const float* b, float* y, std::int64_t n);
}  // namespace ref

}  // namespace qvl::kernels
