#include "kernels/norm.h"

#include <cmath>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels {
namespace {

using testing::all_close;
using testing::FloatBuf;

class NormTest : public ::testing::TestWithParam<Isa> {};

TEST_P(NormTest, LayerNormMatchesReference) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    for (int dim : {1, 3, 7, 16, 17, 31, 100, 1000, 1024, 4096}) {
        const int rows = 3;
        const std::ptrdiff_t stride = dim + 5;
        FloatBuf x(rows * stride), w(dim), b(dim), expect(rows * stride), got(rows * stride);
        testing::fill_uniform(x.data(), x.size(), -3.0f, 5.0f, dim);
        testing::fill_uniform(w.data(), dim, 0.5f, 1.5f, dim + 1);
        testing::fill_uniform(b.data(), dim, -0.5f, 0.5f, dim + 2);
        LayerNormArgs a{.x = x.data(),
                        .x_stride = stride,
                        .w = w.data(),
                        .b = b.data(),
                        .y = expect.data(),
                        .y_stride = stride,
                        .rows = rows,
                        .dim = dim,
                        .eps = 1e-6f};
        ref::layer_norm_f32(a);
        a.y = got.data();
        kernels_for(GetParam()).layer_norm_f32(a);
        EXPECT_TRUE(all_close(got.data(), expect.data(), got.size(), 1e-5, 1e-2)) << "dim=" << dim;
        // In place gives the same result.
        kernels_for(GetParam())
            .layer_norm_f32({.x = x.data(),
                             .x_stride = stride,
                             .w = w.data(),
                             .b = b.data(),
                             .y = x.data(),
                             .y_stride = stride,
                             .rows = rows,
                             .dim = dim,
                             .eps = 1e-6f});
        for (int r = 0; r < rows; ++r) {
            EXPECT_TRUE(all_close(x.data() + r * stride, got.data() + r * stride, dim, 0, 0));
        }
    }
}

TEST_P(NormTest, LayerNormOutputHasZeroMeanUnitVariance) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    const int dim = 1000;
    FloatBuf x(dim), w(dim, 1.0f), b(dim, 0.0f), y(dim);
    testing::fill_uniform(x.data(), dim, 10.0f, 20.0f, 7);
    kernels_for(GetParam())
        .layer_norm_f32({.x = x.data(),
                         .w = w.data(),
                         .b = b.data(),
                         .y = y.data(),
                         .rows = 1,
                         .dim = dim,
                         .eps = 0.0f});
    double mean = 0, var = 0;
    for (int i = 0; i < dim; ++i) mean += y[i];
    mean /= dim;
    for (int i = 0; i < dim; ++i) var += (y[i] - mean) * (y[i] - mean);
    EXPECT_NEAR(mean, 0.0, 1e-5);
    EXPECT_NEAR(var / dim, 1.0, 1e-5);
}

TEST_P(NormTest, RmsNormMatchesReference) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    for (int dim : {1, 3, 7, 16, 17, 31, 100, 128, 1000, 2048}) {
        const int rows = 4;
        const std::ptrdiff_t stride = dim + 3;
        FloatBuf x(rows * stride), w(dim), expect(rows * stride), got(rows * stride);
        testing::fill_uniform(x.data(), x.size(), -2.0f, 2.0f, dim);
        testing::fill_uniform(w.data(), dim, -1.5f, 1.5f, dim + 1);
        RmsNormArgs a{.x = x.data(),
                      .x_stride = stride,
                      .w = w.data(),
                      .y = expect.data(),
                      .y_stride = stride,
                      .rows = rows,
                      .dim = dim,
                      .eps = 1e-6f};
        ref::rms_norm_f32(a);
        a.y = got.data();
        kernels_for(GetParam()).rms_norm_f32(a);
        EXPECT_TRUE(all_close(got.data(), expect.data(), got.size(), 1e-5, 1e-3)) << "dim=" << dim;
    }
}

TEST_P(NormTest, RmsNormHandValues) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    // x = [3, 4]: mean square 12.5, so y = x / sqrt(12.5) * w.
    FloatBuf x(2), w(2), y(2);
    x[0] = 3, x[1] = 4, w[0] = 1, w[1] = 2;
    kernels_for(GetParam())
        .rms_norm_f32({.x = x.data(), .w = w.data(), .y = y.data(), .rows = 1, .dim = 2, .eps = 0});
    EXPECT_NEAR(y[0], 3 / std::sqrt(12.5), 1e-6);
    EXPECT_NEAR(y[1], 8 / std::sqrt(12.5), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, NormTest, ::testing::ValuesIn(all_isas()),
                         testing::isa_param_name);

}  // namespace
}  // namespace qvl::kernels
