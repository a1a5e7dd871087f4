#include "kernels/softmax.h"

#include <cmath>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels {
namespace {

using testing::all_close;
using testing::FloatBuf;

class SoftmaxTest : public ::testing::TestWithParam<Isa> {};

TEST_P(SoftmaxTest, MatchesReferenceAndRowsSumToOne) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    for (int cols : {1, 3, 7, 16, 17, 31, 100, 1000, 3520}) {
        const int rows = 3;
        const std::ptrdiff_t stride = cols + 2;
        FloatBuf x(rows * stride), expect(rows * stride);
        testing::fill_uniform(x.data(), x.size(), -30.0f, 30.0f, cols);
        x[1] = -INFINITY;  // masked entries give exactly 0
        for (std::size_t i = 0; i < x.size(); ++i) expect[i] = x[i];
        ref::softmax_f32(expect.data(), rows, cols, stride);
        kernels_for(GetParam()).softmax_f32(x.data(), rows, cols, stride);
        EXPECT_TRUE(all_close(x.data(), expect.data(), x.size(), 4e-6, 1e-30)) << "cols=" << cols;
        for (int r = 0; r < rows; ++r) {
            double sum = 0;
            for (int i = 0; i < cols; ++i) sum += x[r * stride + i];
            EXPECT_NEAR(sum, 1.0, 1e-5) << "cols=" << cols << " row=" << r;
        }
        if (cols > 1) {
            EXPECT_EQ(x[1], 0.0f);
        }
    }
}

TEST_P(SoftmaxTest, LargeValuesDoNotOverflow) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    FloatBuf x(3);
    x[0] = 1000.0f, x[1] = 1000.0f, x[2] = -1000.0f;
    kernels_for(GetParam()).softmax_f32(x.data(), 1, 3, 3);
    EXPECT_FLOAT_EQ(x[0], 0.5f);
    EXPECT_FLOAT_EQ(x[1], 0.5f);
    EXPECT_EQ(x[2], 0.0f);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SoftmaxTest, ::testing::ValuesIn(all_isas()),
                         testing::isa_param_name);

}  // namespace
}  // namespace qvl::kernels
