// Scalar references for kernels/activation.h, evaluated in double.
#include <cmath>

#include "kernels/activation.h"

namespace qvl::kernels::ref {

void gelu_tanh_f32(const float* x, float* y, std::int64_t n) {
    const double c = std::sqrt(2.0 / M_PI);
    for (std::int64_t i = 0; i < n; ++i) {
        const double u = x[i];
        // 0.5 u (1 + tanh(t)) == u / (1 + exp(-2t)); this form does not cancel for t << 0.
        y[i] = float(u / (1.0 + std::exp(-2.0 * c * (u + 0.044715 * u * u * u))));
    }
}

void gelu_erf_f32(const float* x, float* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        const double u = x[i];
        // erfc keeps full relative accuracy in the far negative tail, where 1 + erf cancels.
        y[i] = float(0.5 * u * std::erfc(-u / std::sqrt(2.0)));
    }
}

void silu_mul_f32(const float* gate, const float* up, float* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        const double g = gate[i];
        y[i] = float(g / (1.0 + std::exp(-g)) * up[i]);
    }
}

void add_f32(const float* a, const float* b, float* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace qvl::kernels::ref
