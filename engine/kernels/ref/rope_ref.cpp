// Scalar reference for rope_f32 (kernels/rope.h).
#include "kernels/rope.h"

namespace qvl::kernels::ref {

void rope_f32(const RopeArgs& a) {
    const int half = a.head_dim / 2;
    for (int r = 0; r < a.rows; ++r) {
        const float* c = a.cos + r * a.cs_stride;
        const float* s = a.sin + r * a.cs_stride;
        for (int h = 0; h < a.n_heads; ++h) {
            float* x = a.x + r * a.x_stride + std::ptrdiff_t(h) * a.head_dim;
            for (int i = 0; i < half; ++i) {
                const float x0 = x[i];
                const float x1 = x[i + half];
                x[i] = x0 * c[i] - x1 * s[i];
                x[i + half] = x1 * c[i] + x0 * s[i];
            }
        }
    }
}

}  // namespace qvl::kernels::ref
