// Scalar reference for kernels/softmax.h, sums in double.
#include <cmath>

#include "kernels/softmax.h"

namespace qvl::kernels::ref {

void softmax_f32(float* x, int rows, int cols, std::ptrdiff_t stride) {
    for (int r = 0; r < rows; ++r) {
        float* row = x + r * stride;
        float max = -INFINITY;
        for (int i = 0; i < cols; ++i) max = std::fmax(max, row[i]);
        double sum = 0.0;
        for (int i = 0; i < cols; ++i) sum += std::exp(double(row[i]) - max);
        for (int i = 0; i < cols; ++i) row[i] = float(std::exp(double(row[i]) - max) / sum);
    }
}

}  // namespace qvl::kernels::ref
