// Helpers for the kernel tests: ISA parameterisation, random data, misaligned buffers and an
// element-wise closeness check that names the first bad index.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/isa.h"
#include "support/bf16_round.h"
#include "support/cpu_skip.h"

namespace qvl::kernels::testing {

#define QVL_SKIP_IF_UNSUPPORTED(isa) QVL_SKIP_UNLESS_CPU(isa)

inline std::string isa_param_name(const ::testing::TestParamInfo<Isa>& info) {
    return isa_name(info.param);
}

// n floats starting one element past a 64-byte boundary (so SIMD loads are unaligned), plus
// nothing after the end: reads past n trip ASan.
class FloatBuf {
  public:
    explicit FloatBuf(std::size_t n, float fill = 0.0f) : storage_(n + 1, fill), n_(n) {}
    float* data() { return storage_.data() + 1; }
    const float* data() const { return storage_.data() + 1; }
    std::size_t size() const { return n_; }
    float& operator[](std::size_t i) { return data()[i]; }
    float operator[](std::size_t i) const { return data()[i]; }
    std::vector<float> vec() const { return {data(), data() + n_}; }

  private:
    std::vector<float> storage_;
    std::size_t n_;
};

// The test-local bf16 rounding (support/bf16_round.h).
using test::rne_bf16;

// The fixture of the GEMM tests, one instance per tier: skips a tier this CPU lacks, and has the
// avx512bf16 rows test the vdpbf16ps kernels on every CPU, also where the engine prefers FMAs
// for packed GEMMs (isa.h; gemm_bf16_policy_test covers that choice).
class GemmTierTest : public ::testing::TestWithParam<Isa> {
  protected:
    void SetUp() override {
        QVL_SKIP_UNLESS_CPU(GetParam());
        saved_policy_ = bf16_dot_for_gemm();
        set_bf16_dot_for_gemm(true);
    }
    void TearDown() override { set_bf16_dot_for_gemm(saved_policy_); }

  private:
    bool saved_policy_ = true;
};

inline void fill_uniform(float* x, std::size_t n, float lo, float hi, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    for (std::size_t i = 0; i < n; ++i) x[i] = dist(rng);
}

// |actual - expected| <= rel * max(|expected|, floor) for every i; reports the first failure.
inline ::testing::AssertionResult all_close(const float* actual, const float* expected,
                                            std::size_t n, double rel, double floor) {
    for (std::size_t i = 0; i < n; ++i) {
        const double e = expected[i];
        const double a = actual[i];
        const double tol = rel * std::fmax(std::fabs(e), floor);
        if (a != e && !(std::fabs(a - e) <= tol) && !(std::isnan(a) && std::isnan(e))) {
            return ::testing::AssertionFailure()
                   << "index " << i << ": actual " << a << " expected " << e << " (diff " << a - e
                   << ", tol " << tol << ")";
        }
    }
    return ::testing::AssertionSuccess();
}

}  // namespace qvl::kernels::testing
