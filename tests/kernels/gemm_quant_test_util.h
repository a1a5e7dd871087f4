// Shared by the quantized-weight GEMM tests (gemm_q8_test, gemm_q4_test): random data, and one
// case run on a tier and checked against ref::gemm_q8 within the f32 block chain's rounding.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/gemm_q8.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels::test_util {

inline constexpr double kEps = 1.0 / (1 << 24);

inline std::vector<float> random_vec(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// Σ_b |d_a d_w isum|, the scale of the f32 rounding of the block chain.
inline double abs_terms(const float* a, int k, const Q8Matrix& w, int j) {
    std::vector<std::int8_t> q(std::size_t(w.k_blocks) * std::size_t(w.block));
    std::vector<float> d(std::size_t(w.k_blocks));
    std::vector<std::int32_t> s(std::size_t(w.k_blocks));
    q8_quantize_row(a, k, w.block, q.data(), d.data(), s.data());
    double total = 0.0;
    for (int b = 0; b < w.k_blocks; ++b) {
        std::int64_t isum = 0;
        for (int i = 0; i < w.block && b * w.block + i < k; ++i)
            isum += q[std::size_t(b * w.block + i)] * q8_weight(w, j, b * w.block + i);
        total += std::fabs(double(d[std::size_t(b)]) * q8_scale(w, j, b) * double(isum));
    }
    return total;
}

struct QuantCase {
    int m, n, k, block;
    GemmActivation act;
    bool bias, residual, gated;
};

// Runs c on isa's kernels with weights w (and w2, the up half of a gated case) against the
// reference: misaligned activations and outputs, strides past the row, nothing written outside.
inline void check_against_reference(const QuantCase& c, Isa isa, const Q8Matrix& w,
                                    const Q8Matrix& w2, std::mt19937& rng) {
    SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
                 " k=" + std::to_string(c.k) + " block=" + std::to_string(c.block) +
                 " act=" + std::to_string(int(c.act)) + " gated=" + std::to_string(c.gated));
    const std::ptrdiff_t lda = c.k + 5, ldc = c.n + 2;
    std::vector<float> a = random_vec(std::size_t(c.m) * lda + 1, rng);
    const float* ap = a.data() + 1;  // misaligned
    std::vector<float> bias = random_vec(std::size_t(c.n), rng);
    std::vector<float> res = random_vec(std::size_t(c.m) * ldc + 1, rng);
    std::vector<float> got(std::size_t(c.m) * ldc + 1, -7.0f), want = got;
    GemmArgs g{.m = c.m,
               .n = c.n,
               .k = c.k,
               .a = ap,
               .lda = lda,
               .w = &w,
               .w_up = c.gated ? &w2 : nullptr,
               .w_type = WeightType::kQ8,
               .bias = c.bias && !c.gated ? bias.data() : nullptr,
               .act = c.gated ? GemmActivation::kNone : c.act,
               .residual = c.residual && !c.gated ? res.data() + 1 : nullptr,
               .ldr = ldc,
               .c = got.data() + 1,
               .ldc = ldc};
    kernels_for(isa).gemm(g);
    g.c = want.data() + 1;
    ref::gemm_q8(g);
    int failures = 0;
    for (int i = 0; i < c.m; ++i) {
        for (int j = 0; j < c.n; ++j) {
            const float* arow = ap + i * lda;
            double scale = abs_terms(arow, c.k, w, j);
            if (c.gated) scale = scale * (1.0 + abs_terms(arow, c.k, w2, j)) + 1.0;
            const double tol = 4.0 * (w.k_blocks + 8) * kEps * scale + 64 * kEps +
                               (g.residual ? 8 * kEps * std::fabs(res[1 + i * ldc + j]) : 0.0);
            const double gv = got[std::size_t(1 + i * ldc + j)];
            const double rv = want[std::size_t(1 + i * ldc + j)];
            if (!(std::fabs(gv - rv) <= tol) && failures++ < 5)
                ADD_FAILURE() << "(" << i << ", " << j << "): got " << gv << " want " << rv
                              << " tol " << tol;
        }
        for (std::ptrdiff_t j = c.n; j < ldc && 1 + i * ldc + j < std::ptrdiff_t(got.size()); ++j)
            EXPECT_EQ(got[std::size_t(1 + i * ldc + j)], -7.0f) << "wrote past row " << i;
    }
}

}  // namespace qvl::kernels::test_util
