#include "kernels/rope.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"
#include "model/rope_tables.h"

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
    model::text_mrope_tables(pos, pos, pos, n_tokens, head_dim, 5e6, section, cs.data(), sn.data());
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

}  // namespace
}  // namespace qvl::kernels
