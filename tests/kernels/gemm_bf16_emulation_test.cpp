// The bf16 GEMM paths (GemmPrecision::kBF16) of every tier against a double-precision emulation
// of their roundings (issue 52, item 2): A, and f32 weights, rounded to bf16 to nearest even with
// a rounding written here (not the engine's, so the reference shares nothing with the kernels),
// products and sums in double. What is left between the two is the kernel's f32 accumulation, so
// that is the tolerance, not bf16's rounding. The inputs hold exact ties (a value halfway between
// two bf16 neighbours) so that round-half-away or truncation differ from round-to-nearest-even.
// Two checks per tier, on odd shapes and tails: an exact one (an identity factor makes every
// output one rounded operand, so the rounding itself is compared bit for bit at every k and
// column position, in every weight layout) and the accumulation bound on random products, plain
// and gated.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/weight_panels.h"

namespace qvl::kernels {
namespace {

using testing::rne_bf16;

constexpr double kEps = 1.0 / (1 << 24);  // f32 unit roundoff

// Random values in [-1, 1); every third one an exact tie: a bf16 value plus half its last place,
// alternating between even and odd last bits, so each rounding rule gives a different answer.
std::vector<float> values_with_ties(std::size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = d(rng);
        if (i % 3 == 0) {
            std::uint32_t u = 0;
            std::memcpy(&u, &v[i], 4);
            u = (u & 0xFFFE0000u) | ((i / 3) % 2 == 0 ? 0u : 0x10000u) | 0x8000u;
            std::memcpy(&v[i], &u, 4);
        }
    }
    return v;
}

// An n x k weight matrix in the three layouts a bf16 product reads: f32 (rounded by the kernel),
// bf16, and load-time panels of the bf16 values. ld: k + 3 (unaligned rows).
struct Weights {
    int n, k;
    std::ptrdiff_t ld;
    std::vector<float> f32;
    std::vector<std::uint16_t> bf16;
    std::vector<std::uint32_t> panels;
    Weights(int n_, int k_, const std::vector<float>& values) : n(n_), k(k_), ld(k_ + 3) {
        f32.assign(std::size_t(n) * std::size_t(ld), 0.0f);
        bf16.assign(f32.size(), 0);
        for (int j = 0; j < n; ++j) {
            for (int kk = 0; kk < k; ++kk) {
                const float v = values[std::size_t(j) * std::size_t(k) + std::size_t(kk)];
                f32[std::size_t(j * ld + kk)] = v;
                bf16[std::size_t(j * ld + kk)] = test::rne_bf16_bits(v);
            }
        }
        panels.resize(panel_bytes(n, k) / sizeof(std::uint32_t) + 1);
        pack_panels(bf16.data(), ld, n, k, 0, panel_count(n), panels.data());
    }
    const void* ptr(WeightType t) const {
        if (t == WeightType::kBF16Panels) return panels.data();
        return t == WeightType::kBF16 ? static_cast<const void*>(bf16.data()) : f32.data();
    }
    std::ptrdiff_t stride(WeightType t) const {
        return t == WeightType::kBF16Panels ? panel_pairs(k) : ld;
    }
    // The value the kernel multiplies: the weight rounded to bf16 (stored so, or rounded).
    double rounded(int j, int kk) const { return rne_bf16(f32[std::size_t(j * ld + kk)]); }
};

const WeightType kLayouts[] = {WeightType::kF32, WeightType::kBF16, WeightType::kBF16Panels};

const char* layout_name(WeightType t) {
    return t == WeightType::kF32 ? "f32" : t == WeightType::kBF16 ? "bf16" : "panels";
}

class GemmBf16Emulation : public testing::GemmTierTest {};

GemmArgs product(int m, int n, int k, const std::vector<float>& a, std::ptrdiff_t lda,
                 const Weights& w, WeightType t, std::vector<float>& c) {
    c.assign(std::size_t(m) * std::size_t(n + 1), NAN);
    return GemmArgs{.m = m,
                    .n = n,
                    .k = k,
                    .a = a.data(),
                    .lda = lda,
                    .w = w.ptr(t),
                    .ldw = w.stride(t),
                    .w_type = t,
                    .c = c.data(),
                    .ldc = n + 1,
                    .precision = GemmPrecision::kBF16};
}

// A times an identity (n = k) gives A rounded, and an identity times W gives W rounded: one
// product per output, exact in any accumulation, so the kernel's rounding is compared bit for
// bit at every k position of every row tail and column panel.
TEST_P(GemmBf16Emulation, RoundsEveryOperandToNearestEven) {
    std::mt19937 rng(52);
    for (const int m : {1, 3, 17, 33}) {
        for (const int k : {1, 7, 16, 31, 33, 64, 100}) {
            const std::vector<float> a = values_with_ties(std::size_t(m) * std::size_t(k), rng);
            std::vector<float> eye(std::size_t(k) * std::size_t(k), 0.0f);
            for (int i = 0; i < k; ++i) eye[std::size_t(i * k + i)] = 1.0f;
            const Weights identity(k, k, eye);
            // The transposed problem: rows of an identity A pick each weight (f32 layout only:
            // the others hold the weights already rounded).
            const std::vector<float> wv = values_with_ties(std::size_t(m) * std::size_t(k), rng);
            const Weights w(m, k, wv);
            for (const WeightType t : kLayouts) {
                std::vector<float> c;
                kernels_for(GetParam()).gemm(product(m, k, k, a, k, identity, t, c));
                for (int i = 0; i < m; ++i) {
                    for (int j = 0; j < k; ++j) {
                        const float x = a[std::size_t(i * k + j)];
                        ASSERT_EQ(c[std::size_t(i * (k + 1) + j)], rne_bf16(x))
                            << layout_name(t) << " m=" << m << " k=" << k << " a[" << i << "][" << j
                            << "] = " << x;
                    }
                }
            }
            std::vector<float> c;
            kernels_for(GetParam()).gemm(product(k, m, k, eye, k, w, WeightType::kF32, c));
            for (int i = 0; i < k; ++i) {
                for (int j = 0; j < m; ++j) {
                    ASSERT_EQ(c[std::size_t(i * (m + 1) + j)], w.rounded(j, i))
                        << "f32 weights m=" << m << " k=" << k << " w[" << j << "][" << i << "]";
                }
            }
        }
    }
}

// Σ rne(a)·rne(w) in double; *abs gets Σ |rne(a)·rne(w)|, the scale of the f32 sum's error.
double emulated_dot(const float* a, const Weights& w, int j, double* abs) {
    double sum = 0;
    *abs = 0;
    for (int kk = 0; kk < w.k; ++kk) {
        const double p = double(rne_bf16(a[kk])) * w.rounded(j, kk);
        sum += p;
        *abs += std::fabs(p);
    }
    return sum;
}

// Random products against the emulation. Products of two bf16 values are exact in f32, so the
// kernel's only error is its f32 sum: at most ~k u Σ|p| for a chain of k FMAs (vdpbf16ps adds
// pairs: fewer roundings), plus the final result's half ulp. Bound: 1.2 (k + 2) u Σ|p| + u |c|.
TEST_P(GemmBf16Emulation, SumsAreTheOnlyErrorLeft) {
    std::mt19937 rng(7);
    struct Shape {
        int m, n, k;
    };
    const Shape shapes[] = {{1, 1, 1},   {1, 17, 31},  {3, 15, 33},   {5, 33, 100},
                            {17, 48, 7}, {33, 16, 64}, {70, 31, 257}, {2, 20, 2101}};
    double worst = 0;  // in units of the bound
    for (const Shape& s : shapes) {
        const std::vector<float> a = values_with_ties(std::size_t(s.m) * std::size_t(s.k), rng);
        const Weights w(s.n, s.k, values_with_ties(std::size_t(s.n) * std::size_t(s.k), rng));
        const Weights up(s.n, s.k, values_with_ties(std::size_t(s.n) * std::size_t(s.k), rng));
        for (const WeightType t : kLayouts) {
            for (const bool gated : {false, true}) {
                std::vector<float> c;
                GemmArgs g = product(s.m, s.n, s.k, a, s.k, w, t, c);
                if (gated) g.w_up = up.ptr(t);
                kernels_for(GetParam()).gemm(g);
                for (int i = 0; i < s.m; ++i) {
                    for (int j = 0; j < s.n; ++j) {
                        const float* row = a.data() + std::ptrdiff_t(i) * s.k;
                        double sg = 0, su = 0;
                        const double gate = emulated_dot(row, w, j, &sg);
                        double want = gate, tol = 1.2 * (s.k + 2) * kEps * sg;
                        if (gated) {
                            const double u = emulated_dot(row, up, j, &su);
                            const double silu = gate / (1 + std::exp(-gate));
                            want = silu * u;
                            // silu' <= 1.1: the gate's error, times |up|, plus the up's times
                            // |silu|, plus silu's own few ulps.
                            tol = 1.2 * (s.k + 2) * kEps *
                                      (1.1 * sg * std::fabs(u) + su * std::fabs(silu)) +
                                  8 * kEps * std::fabs(want);
                        }
                        tol += kEps * std::fabs(want) + 1e-30;
                        const double err = std::fabs(c[std::size_t(i * (s.n + 1) + j)] - want);
                        worst = std::max(worst, err / tol);
                        ASSERT_LE(err, tol)
                            << layout_name(t) << (gated ? " gated" : "") << " m=" << s.m
                            << " n=" << s.n << " k=" << s.k << " at " << i << "," << j;
                    }
                    EXPECT_TRUE(std::isnan(c[std::size_t(i * (s.n + 1) + s.n)]))
                        << "past row " << i;
                }
            }
        }
    }
    RecordProperty("worst_in_units_of_bound", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(AllIsas, GemmBf16Emulation, ::testing::ValuesIn(all_isas()),
                         testing::isa_param_name);

}  // namespace
}  // namespace qvl::kernels
