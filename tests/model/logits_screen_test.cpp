// The logits screen (model/logits_screen.h): its bounds contain the exact product's value of
// every output, on every tier and precision, for activations shaped like the final hidden
// state and for hostile ones (outliers, tiny and zero rows); they are tight enough to screen;
// and a product over gathered rows gives the full product's bits (what Session::sample relies
// on to compute only the candidates).
#include "model/logits_screen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "support/cpu_skip.h"

namespace qvl::model {
namespace {

using kernels::GemmPrecision;
using kernels::Isa;

constexpr int kRows = 999;  // not a multiple of the 16-row panels
constexpr int kCols = 200;  // not a multiple of the 64-value blocks
constexpr std::ptrdiff_t kLd = kCols + 3;

struct Fixture {
    std::vector<std::uint16_t> w;  // [kRows, kLd] bf16
    Matrix m;
};

// Rows of different scales, a few large weights per row: the blocks' scales then differ.
Fixture make_matrix(std::uint32_t seed) {
    Fixture f;
    f.w.assign(std::size_t(kRows) * kLd, 0);
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (int n = 0; n < kRows; ++n) {
        const float scale = 0.01f * float(1 + n % 7);
        for (int k = 0; k < kCols; ++k) {
            float v = g(rng) * scale;
            if ((n * 31 + k * 17) % 97 == 0) v *= 20.0f;
            f.w[std::size_t(n) * kLd + k] = base::f32_to_bf16(v).bits;
        }
    }
    f.m = Matrix{.data = f.w.data(),
                 .type = kernels::WeightType::kBF16,
                 .rows = kRows,
                 .cols = kCols,
                 .ld = kLd,
                 .name = "lm_head"};
    return f;
}

// The worst case of the weight term: x along row n's rounding error W_n - W^_n, where the
// Cauchy-Schwarz bound is an equality (a bound too small by a few percent fails here).
std::vector<float> adversarial_row(const Fixture& f, const LogitsScreen& s, int n) {
    std::vector<float> x(kCols);
    for (int k = 0; k < kCols; ++k) {
        const float w = base::bf16_to_f32({f.w[std::size_t(n) * kLd + k]});
        const float wq = float(kernels::q8_weight(s.matrix(), n, k)) *
                         kernels::q8_scale(s.matrix(), n, k / s.matrix().block);
        x[std::size_t(k)] = 1000.0f * (w - wq);
    }
    return x;
}

std::vector<std::vector<float>> activation_rows() {
    std::mt19937 rng(11);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<std::vector<float>> rows;
    std::vector<float> x(kCols);
    for (float& v : x) v = g(rng) * 3.0f;
    rows.push_back(x);
    for (int i = 0; i < kCols; i += 37) x[std::size_t(i)] *= 200.0f;  // outlier channels
    rows.push_back(x);
    for (float& v : x) v = g(rng) * 1e-20f;  // tiny
    rows.push_back(x);
    rows.emplace_back(kCols, 0.0f);
    return rows;
}

void full_product(const kernels::KernelTable& table, const float* x, const void* w,
                  std::ptrdiff_t ldw, int n, GemmPrecision p, float* out) {
    const kernels::GemmArgs a{.m = 1,
                              .n = n,
                              .k = kCols,
                              .a = x,
                              .lda = kCols,
                              .w = w,
                              .ldw = ldw,
                              .w_type = kernels::WeightType::kBF16,
                              .c = out,
                              .ldc = n,
                              .precision = p};
    const int nt = kernels::gemm_num_tasks(a, 2);
    for (int t = 0; t < nt; ++t) table.gemm_task(a, t, nt);
}

class LogitsScreenTest : public ::testing::TestWithParam<Isa> {
  protected:
    void SetUp() override { QVL_SKIP_UNLESS_CPU(GetParam()); }
};

TEST_P(LogitsScreenTest, BoundsContainTheExactProduct) {
    const Fixture f = make_matrix(3);
    auto screen = LogitsScreen::build(f.m, 64, 2);
    ASSERT_TRUE(screen.ok()) << screen.status().message();
    const LogitsScreen& s = *screen.value();
    const kernels::KernelTable& table = kernels::kernels_for(GetParam());
    std::vector<float> xt(kCols), scratch(s.scratch_floats()), scores(kRows), exact(kRows),
        lower(kRows), upper(kRows);
    std::vector<std::vector<float>> xs = activation_rows();
    xs.push_back(adversarial_row(f, s, 500));
    int row_index = 0;
    for (const std::vector<float>& x : xs) {
        for (GemmPrecision p : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
            SCOPED_TRACE("activation row " + std::to_string(row_index) +
                         (p == GemmPrecision::kBF16 ? " bf16" : " f32"));
            const ScreenRowBound b = s.prepare_row(x.data(), p, xt.data(), scratch.data());
            const kernels::GemmArgs q{.m = 1,
                                      .n = kRows,
                                      .k = kCols,
                                      .a = xt.data(),
                                      .lda = kCols,
                                      .w = &s.matrix(),
                                      .ldw = kCols,
                                      .w_type = kernels::WeightType::kQ8,
                                      .c = scores.data(),
                                      .ldc = kRows};
            const int nt = kernels::gemm_num_tasks(q, 2);
            for (int t = 0; t < nt; ++t) table.gemm_task(q, t, nt);
            full_product(table, x.data(), f.w.data(), kLd, kRows, p, exact.data());
            s.bounds(b, scores.data(), lower.data(), upper.data());
            double width = 0, spread = 0, closest = INFINITY;
            for (int n = 0; n < kRows; ++n) {
                ASSERT_LE(lower[n], exact[n]) << "output " << n;
                ASSERT_GE(upper[n], exact[n]) << "output " << n;
                width = std::max(width, double(upper[n]) - double(lower[n]));
                closest = std::min(
                    closest, std::min(double(exact[n]) - lower[n], double(upper[n]) - exact[n]) /
                                 (double(upper[n]) - lower[n]));
                spread = std::max(spread, std::fabs(double(exact[n])));
            }
            // Tight enough to screen: for the gaussian row the widest interval is a part of
            // the logits' range (0.31 here, where the weights' outliers inflate their blocks'
            // scales; a bound of infinity would pass the checks above).
            if (row_index == 0) {
                EXPECT_LT(width, 0.4 * spread);
            }
            if (row_index == 3) {
                EXPECT_LT(width, 1e-25);  // a zero row: exact zeros
            }
            if (row_index == 4) {  // the adversarial row: its output n=500 nearly at the edge
                EXPECT_LT(closest, 0.2);  // 0.13-0.14 measured
            }
        }
        ++row_index;
    }
}

TEST_P(LogitsScreenTest, GatheredRowsGiveTheFullProductsBits) {
    const Fixture f = make_matrix(5);
    const kernels::KernelTable& table = kernels::kernels_for(GetParam());
    const std::vector<float> x = activation_rows()[1];
    const std::vector<int> ids = {0, 1, 15, 16, 17, 500, 997, 998};
    for (GemmPrecision p : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
        std::vector<float> full(kRows), some(ids.size());
        full_product(table, x.data(), f.w.data(), kLd, kRows, p, full.data());
        std::vector<std::uint16_t> rows(ids.size() * kCols);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            std::copy_n(f.w.data() + std::ptrdiff_t(ids[i]) * kLd, kCols, rows.data() + i * kCols);
        }
        full_product(table, x.data(), rows.data(), kCols, int(ids.size()), p, some.data());
        for (std::size_t i = 0; i < ids.size(); ++i) {
            EXPECT_EQ(std::bit_cast<std::uint32_t>(some[i]),
                      std::bit_cast<std::uint32_t>(full[std::size_t(ids[i])]))
                << "row " << ids[i] << (p == GemmPrecision::kBF16 ? " bf16" : " f32");
        }
    }
}

TEST(LogitsScreen, RefusesOtherWeightTypes) {
    std::vector<float> w(16 * 64, 1.0f);
    const Matrix m{.data = w.data(),
                   .type = kernels::WeightType::kF32,
                   .rows = 16,
                   .cols = 64,
                   .ld = 64,
                   .name = "lm_head"};
    auto s = LogitsScreen::build(m, 64, 1);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("lm_head"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, LogitsScreenTest, ::testing::ValuesIn(kernels::all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                             return std::string(kernels::isa_name(info.param));
                         });

}  // namespace
}  // namespace qvl::model
