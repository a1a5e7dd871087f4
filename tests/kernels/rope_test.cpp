#include "kernels/rope.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels {
namespace {

using testing::all_close;
using testing::FloatBuf;

class RopeTest : public ::testing::TestWithParam<Isa> {};

TEST_P(RopeTest, MatchesReference) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    for (int head_dim : {2, 8, 34, 64, 128}) {
        for (int rows : {1, 3, 17}) {
            const int n_heads = 3, half = head_dim / 2;
            const std::ptrdiff_t x_stride = n_heads * head_dim + 7, cs_stride = half + 1;
            FloatBuf x(rows * x_stride), cs(rows * cs_stride), sn(rows * cs_stride);
            testing::fill_uniform(x.data(), x.size(), -2.0f, 2.0f, rows * head_dim);
            testing::fill_uniform(cs.data(), cs.size(), -1.0f, 1.0f, 1);
            testing::fill_uniform(sn.data(), sn.size(), -1.0f, 1.0f, 2);
            FloatBuf expect(x.size());
            for (std::size_t i = 0; i < x.size(); ++i) expect[i] = x[i];
            RopeArgs a{.x = expect.data(),
                       .x_stride = x_stride,
                       .rows = rows,
                       .n_heads = n_heads,
                       .head_dim = head_dim,
                       .cos = cs.data(),
                       .sin = sn.data(),
                       .cs_stride = cs_stride};
            ref::rope_f32(a);
            a.x = x.data();
            kernels_for(GetParam()).rope_f32(a);
            // Two products and a sum (fused or not): an ulp or two of the inputs' magnitude (2).
            EXPECT_TRUE(all_close(x.data(), expect.data(), x.size(), 3e-7, 2.0))
                << "head_dim=" << head_dim << " rows=" << rows;
        }
    }
}

TEST_P(RopeTest, PositionZeroIsIdentityAndRotationKeepsNorm) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    const int head_dim = 128, half = 64, n_tokens = 2, n_heads = 2;
    const std::int32_t pos[n_tokens] = {0, 1000};
    const int section[3] = {24, 20, 20};
    std::vector<float> cs(n_tokens * half), sn(n_tokens * half);
    text_mrope_tables(pos, pos, pos, n_tokens, head_dim, 5e6, section, cs.data(), sn.data());
    FloatBuf x(n_tokens * n_heads * head_dim);
    testing::fill_uniform(x.data(), x.size(), -1.0f, 1.0f, 3);
    const std::vector<float> before = x.vec();
    kernels_for(GetParam())
        .rope_f32({.x = x.data(),
                   .x_stride = n_heads * head_dim,
                   .rows = n_tokens,
                   .n_heads = n_heads,
                   .head_dim = head_dim,
                   .cos = cs.data(),
                   .sin = sn.data(),
                   .cs_stride = half});
    EXPECT_TRUE(all_close(x.data(), before.data(), n_heads * head_dim, 0, 0));  // position 0
    for (int h = 0; h < n_heads; ++h) {
        for (int i = 0; i < half; ++i) {
            const float* b = before.data() + (n_heads + h) * head_dim;
            const float* y = x.data() + (n_heads + h) * head_dim;
            EXPECT_NEAR(y[i] * y[i] + y[i + half] * y[i + half],
                        b[i] * b[i] + b[i + half] * b[i + half], 1e-6);
        }
    }
    EXPECT_NE(x[n_heads * head_dim], before[n_heads * head_dim]);  // position 1000 rotates
}

INSTANTIATE_TEST_SUITE_P(AllIsas, RopeTest, ::testing::ValuesIn(all_isas()),
                         testing::isa_param_name);

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
}  // namespace qvl::kernels
