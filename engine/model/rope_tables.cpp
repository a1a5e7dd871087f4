#include "model/rope_tables.h"

#include <cmath>

namespace qvl::model {

void text_mrope_tables(const std::int32_t* pos_t, const std::int32_t* pos_h,
                       const std::int32_t* pos_w, int n_tokens, int head_dim, double theta,
                       const int mrope_section[3], float* cos, float* sin) {
    const int half = head_dim / 2;
    for (int n = 0; n < n_tokens; ++n) {
        for (int k = 0; k < half; ++k) {
            std::int32_t p = pos_t[n];
            if (k % 3 == 1 && k < 3 * mrope_section[1]) {
                p = pos_h[n];
            } else if (k % 3 == 2 && k < 3 * mrope_section[2]) {
                p = pos_w[n];
            }
            const double inv_freq = 1.0 / std::pow(theta, 2.0 * k / head_dim);
            const double angle = double(p) * inv_freq;
            cos[std::ptrdiff_t(n) * half + k] = float(std::cos(angle));
            sin[std::ptrdiff_t(n) * half + k] = float(std::sin(angle));
        }
    }
}

void vision_rope_tables(const std::int32_t* rows, const std::int32_t* cols, int n_patches,
                        int head_dim, double theta, float* cos, float* sin) {
    const int half = head_dim / 2;
    const int quarter = head_dim / 4;
    for (int n = 0; n < n_patches; ++n) {
        for (int j = 0; j < half; ++j) {
            const int k = j < quarter ? j : j - quarter;
            const double p = j < quarter ? rows[n] : cols[n];
            const double inv_freq = 1.0 / std::pow(theta, 2.0 * k / half);
            const double angle = p * inv_freq;
            cos[std::ptrdiff_t(n) * half + j] = float(std::cos(angle));
            sin[std::ptrdiff_t(n) * half + j] = float(std::sin(angle));
        }
    }
}

}  // namespace qvl::model
