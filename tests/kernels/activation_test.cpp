#include "kernels/activation.h"

#include <cmath>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels {
namespace {

using testing::all_close;
using testing::FloatBuf;

class ActivationTest : public ::testing::TestWithParam<Isa> {};

constexpr int kSizes[] = {1, 3, 7, 16, 17, 31, 100, 1000, 4099};

TEST_P(ActivationTest, UnaryMatchReference) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    using Fn = void (*const VectorKernels::*)(const float*, float*, std::int64_t);
    using RefFn = void (*)(const float*, float*, std::int64_t);
    const struct {
        const char* name;
        Fn fn;
        RefFn ref;
    } cases[] = {{"gelu_tanh", &VectorKernels::gelu_tanh_f32, &ref::gelu_tanh_f32},
                 {"gelu_erf", &VectorKernels::gelu_erf_f32, &ref::gelu_erf_f32}};
    for (const auto& c : cases) {
        for (int n : kSizes) {
            FloatBuf x(n), expect(n), got(n);
            testing::fill_uniform(x.data(), n, -12.0f, 12.0f, n);
            c.ref(x.data(), expect.data(), n);
            (kernels_for(GetParam()).*c.fn)(x.data(), got.data(), n);
            // A few ulp relative. The floor admits errors far below f32 resolution of the
            // inputs: xsimd's erfc is ~2e-4 relative at erfc(5) (GELU output 1e-13), and exp of
            // a large f32 argument carries the argument's rounding (outputs < 1e-17).
            EXPECT_TRUE(all_close(got.data(), expect.data(), n, 4e-6, 1e-9))
                << c.name << " n=" << n;
            (kernels_for(GetParam()).*c.fn)(x.data(), x.data(), n);  // in place
            EXPECT_TRUE(all_close(x.data(), got.data(), n, 0, 0)) << c.name << " in place";
        }
    }
}

TEST_P(ActivationTest, HandValues) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    FloatBuf x(3), y(3);
    x[0] = 0.0f, x[1] = 1.0f, x[2] = -1.0f;
    kernels_for(GetParam()).gelu_erf_f32(x.data(), y.data(), 3);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_NEAR(y[1], 0.8413447460685429, 1e-7);
    EXPECT_NEAR(y[2], -0.15865525393145707, 1e-7);
    kernels_for(GetParam()).gelu_tanh_f32(x.data(), y.data(), 3);
    EXPECT_NEAR(y[1], 0.8411919906082768, 1e-7);
    FloatBuf up(3, 2.0f);
    kernels_for(GetParam()).silu_mul_f32(x.data(), up.data(), y.data(), 3);
    EXPECT_NEAR(y[1], 2 * 0.7310585786300049, 2e-7);
    EXPECT_NEAR(y[2], -2 * 0.2689414213699951, 2e-7);
}

TEST_P(ActivationTest, BinaryMatchReference) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    for (int n : kSizes) {
        FloatBuf g(n), u(n), expect(n), got(n);
        testing::fill_uniform(g.data(), n, -20.0f, 20.0f, n);
        testing::fill_uniform(u.data(), n, -3.0f, 3.0f, n + 1);
        ref::silu_mul_f32(g.data(), u.data(), expect.data(), n);
        kernels_for(GetParam()).silu_mul_f32(g.data(), u.data(), got.data(), n);
        EXPECT_TRUE(all_close(got.data(), expect.data(), n, 4e-6, 1e-30)) << "silu n=" << n;
        ref::add_f32(g.data(), u.data(), expect.data(), n);
        kernels_for(GetParam()).add_f32(g.data(), u.data(), got.data(), n);
        EXPECT_TRUE(all_close(got.data(), expect.data(), n, 0, 0)) << "add n=" << n;
        kernels_for(GetParam()).add_f32(g.data(), u.data(), u.data(), n);  // y aliases b
        EXPECT_TRUE(all_close(u.data(), expect.data(), n, 0, 0)) << "add in place n=" << n;
    }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, ActivationTest, ::testing::ValuesIn(all_isas()),
                         testing::isa_param_name);

}  // namespace
}  // namespace qvl::kernels
