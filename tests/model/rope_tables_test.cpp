// The model's RoPE tables against per-element computations from the spec's formulas.
#include "model/rope_tables.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace qvl::model {
namespace {

TEST(RopeTables, TextMropeMatchesPerSlotLoop) {
    const int head_dim = 128, half = 64, n = 5;
    const int section[3] = {24, 20, 20};
    const std::int32_t pt[n] = {0, 4, 4, 18, 30}, ph[n] = {0, 4, 9, 18, 30},
                       pw[n] = {0, 4, 17, 18, 30};
    // Slot axes built independently: T everywhere, then every third slot from 1 (H) and
    // from 2 (W), section[1] resp. section[2] of them.
    char axis[half];
    for (char& c : axis) c = 'T';
    for (int i = 0; i < section[1]; ++i) axis[3 * i + 1] = 'H';
    for (int i = 0; i < section[2]; ++i) axis[3 * i + 2] = 'W';
    std::vector<float> cs(n * half), sn(n * half);
    text_mrope_tables(pt, ph, pw, n, head_dim, 5e6, section, cs.data(), sn.data());
    int n_t = 0;
    for (int k = 0; k < half; ++k) n_t += axis[k] == 'T';
    EXPECT_EQ(n_t, 24);
    for (int t = 0; t < n; ++t) {
        for (int k = 0; k < half; ++k) {
            const double p = axis[k] == 'T' ? pt[t] : axis[k] == 'H' ? ph[t] : pw[t];
            const double ang = p * std::pow(5e6, -double(2 * k) / head_dim);
            EXPECT_NEAR(cs[t * half + k], std::cos(ang), 1e-7) << "token " << t << " slot " << k;
            EXPECT_NEAR(sn[t * half + k], std::sin(ang), 1e-7) << "token " << t << " slot " << k;
        }
    }
}

TEST(RopeTables, VisionRowThenColumnFrequencies) {
    const int head_dim = 64, half = 32;
    const std::int32_t rows[2] = {0, 3}, cols[2] = {0, 5};
    std::vector<float> cs(2 * half), sn(2 * half);
    vision_rope_tables(rows, cols, 2, head_dim, 10000.0, cs.data(), sn.data());
    for (int j = 0; j < half; ++j) {
        EXPECT_EQ(cs[j], 1.0f);
        EXPECT_EQ(sn[j], 0.0f);
        const int k = j % 16;
        const double inv = 1.0 / std::pow(10000.0, 2.0 * k / 32);
        const double ang = (j < 16 ? 3 : 5) * inv;
        EXPECT_NEAR(cs[half + j], std::cos(ang), 1e-7) << j;
        EXPECT_NEAR(sn[half + j], std::sin(ang), 1e-7) << j;
    }
}

}  // namespace
}  // namespace qvl::model
