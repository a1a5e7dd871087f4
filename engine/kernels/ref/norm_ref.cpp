// Scalar references for kernels/norm.h: loops in formula order, statistics in double.
#include <cmath>

#include "kernels/norm.h"

namespace qvl::kernels::ref {

void layer_norm_f32(const LayerNormArgs& a) {
    for (int r = 0; r < a.rows; ++r) {
        const float* x = a.x + r * a.x_stride;
        float* y = a.y + r * a.y_stride;
        double sum = 0.0;
        for (int i = 0; i < a.dim; ++i) sum += x[i];
        const double mean = sum / a.dim;
        double sum_sq = 0.0;
        for (int i = 0; i < a.dim; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
        const double inv_std = 1.0 / std::sqrt(sum_sq / a.dim + a.eps);
        for (int i = 0; i < a.dim; ++i) {
            y[i] = float((x[i] - mean) * inv_std * a.w[i] + a.b[i]);
        }
    }
}

void rms_norm_f32(const RmsNormArgs& a) {
    for (int r = 0; r < a.rows; ++r) {
        const float* x = a.x + r * a.x_stride;
        float* y = a.y + r * a.y_stride;
        double sum_sq = 0.0;
        for (int i = 0; i < a.dim; ++i) sum_sq += double(x[i]) * x[i];
        const double inv_rms = 1.0 / std::sqrt(sum_sq / a.dim + a.eps);
        for (int i = 0; i < a.dim; ++i) y[i] = float(x[i] * inv_rms * a.w[i]);
    }
}

}  // namespace qvl::kernels::ref
