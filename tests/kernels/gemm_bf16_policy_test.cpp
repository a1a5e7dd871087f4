// The choice between vdpbf16ps and f32 FMAs for products with bf16 operands (isa.h): the rule
// per CPU, and that the avx512bf16 tier follows it for every m (the streaming path of small m
// too: one arithmetic per row, whatever m).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "base/bf16.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "support/cpu_skip.h"

namespace qvl::kernels {
namespace {

TEST(Bf16DotPolicy, OnlyNonIntelCpusWithTheInstructionPreferIt) {
    EXPECT_TRUE(bf16_dot_beats_fma(/*cpu_has_avx512_bf16=*/true, /*cpu_is_intel=*/false));
    EXPECT_FALSE(bf16_dot_beats_fma(true, true));
    EXPECT_FALSE(bf16_dot_beats_fma(false, false));
    EXPECT_FALSE(bf16_dot_beats_fma(false, true));
}

// Restores the process's policy when a test ends.
class PolicyGuard {
  public:
    PolicyGuard() : saved_(bf16_dot_for_gemm()) {}
    ~PolicyGuard() { set_bf16_dot_for_gemm(saved_); }
    PolicyGuard(const PolicyGuard&) = delete;
    PolicyGuard& operator=(const PolicyGuard&) = delete;

  private:
    bool saved_;
};

struct Problem {
    int m, n, k;
    std::vector<float> a;
    std::vector<std::uint16_t> w;
    Problem(int m_, int n_, int k_)
        : m(m_), n(n_), k(k_), a(std::size_t(m_) * k_), w(std::size_t(n_) * k_) {
        std::mt19937 rng(11);
        std::uniform_real_distribution<float> d(-1.0f, 1.0f);
        for (float& x : a) x = d(rng);
        for (std::uint16_t& x : w) x = base::f32_to_bf16(d(rng)).bits;
    }
    std::vector<float> run(Isa isa) const {
        std::vector<float> c(std::size_t(m) * n);
        const GemmArgs g{.m = m,
                         .n = n,
                         .k = k,
                         .a = a.data(),
                         .lda = k,
                         .w = w.data(),
                         .ldw = k,
                         .w_type = WeightType::kBF16,
                         .c = c.data(),
                         .ldc = n,
                         .precision = GemmPrecision::kBF16};
        kernels_for(isa).gemm(g);
        return c;
    }
};

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

TEST(Bf16DotPolicy, EveryMFollowsThePolicy) {
    QVL_SKIP_UNLESS_CPU(Isa::kAvx512Bf16);
    const PolicyGuard guard;
    for (const Problem& p : {Problem(77, 70, 333), Problem(3, 70, 333)}) {  // packed, streaming
        set_bf16_dot_for_gemm(false);
        const std::vector<float> fma = p.run(Isa::kAvx512);
        EXPECT_TRUE(same_bits(p.run(Isa::kAvx512Bf16), fma))
            << "m=" << p.m << ": with the dot product off, the bf16 tier must run the FMA kernel";
        set_bf16_dot_for_gemm(true);
        EXPECT_FALSE(same_bits(p.run(Isa::kAvx512Bf16), fma))
            << "m=" << p.m << ": with the dot product on, the bf16 tier must run vdpbf16ps "
            << "(its sums pair products, so some bits differ)";
    }
}

}  // namespace
}  // namespace qvl::kernels
