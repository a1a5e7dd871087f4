// Helpers for the kernel tests: ISA parameterisation, random data, misaligned buffers and an
// element-wise closeness check that names the first bad index.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/isa.h"
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
