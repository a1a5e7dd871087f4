// Row softmax in place: x[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).
// x: [rows, cols] f32, row stride in elements (>= cols). cols >= 1 when rows > 0. -inf entries
// give 0 (a row of only -inf gives NaN, as in torch). No alignment required. Sums in f32 or
// wider (reference: double). Entry: KernelTable::softmax_f32 (kernels/kernel_table.h).
#pragma once

#include <cstddef>

namespace qvl::kernels {

namespace ref {
void softmax_f32(float* x, int rows, int cols, std::ptrdiff_t stride);
}  // namespace ref

}  // namespace qvl::kernels
