// Row invariance of the small-M products a batched decode step runs (M = 1..32 decoding
// sequences): every output row is bit-identical whatever the other rows are and however many
// there are, on every ISA tier, weight type and precision, plain and gated. The runtime's batch
// invariance (a sequence's logits do not depend on the batch) rests on this.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels {
namespace {

constexpr int kMaxRows = 32;  // the runtime's largest decode batch (model::kMaxDecodeBatch)

class GemmRowInvariance : public ::testing::TestWithParam<Isa> {
  protected:
    void SetUp() override {
        if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " unsupported";
    }
};

TEST_P(GemmRowInvariance, EachRowIndependentOfM) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (auto [n, k] : {std::pair{67, 300}, std::pair{130, 77}, std::pair{17, 2048}}) {
        std::vector<float> a(std::size_t(kMaxRows) * k), res(std::size_t(kMaxRows) * n),
            bias(static_cast<std::size_t>(n)), wf(std::size_t(n) * k), wf2(std::size_t(n) * k);
        std::vector<std::uint16_t> wb(std::size_t(n) * k), wb2(std::size_t(n) * k);
        for (float& x : a) x = d(rng);
        for (float& x : res) x = d(rng);
        for (float& x : bias) x = d(rng);
        for (std::size_t i = 0; i < wf.size(); ++i) {
            wf[i] = d(rng);
            wf2[i] = d(rng);
            wb[i] = base::f32_to_bf16(wf[i]).bits;
            wb2[i] = base::f32_to_bf16(wf2[i]).bits;
        }
        for (WeightType wt : {WeightType::kBF16, WeightType::kF32}) {
            const void* w = wt == WeightType::kBF16 ? static_cast<const void*>(wb.data())
                                                    : static_cast<const void*>(wf.data());
            const void* w2 = wt == WeightType::kBF16 ? static_cast<const void*>(wb2.data())
                                                     : static_cast<const void*>(wf2.data());
            for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
                // Row i alone (M = 1, reading row i of A) is the reference for every M.
                auto run = [&](int row0, int m, bool gated, float* c) {
                    if (gated) {
                        kernels_for(GetParam())
                            .gemm({.m = m,
                                   .n = n,
                                   .k = k,
                                   .a = a.data() + std::ptrdiff_t(row0) * k,
                                   .lda = k,
                                   .w = w,
                                   .w_up = w2,
                                   .ldw = k,
                                   .w_type = wt,
                                   .c = c,
                                   .ldc = n,
                                   .precision = prec});
                    } else {
                        kernels_for(GetParam())
                            .gemm({.m = m,
                                   .n = n,
                                   .k = k,
                                   .a = a.data() + std::ptrdiff_t(row0) * k,
                                   .lda = k,
                                   .w = w,
                                   .ldw = k,
                                   .w_type = wt,
                                   .bias = bias.data(),
                                   .act = GemmActivation::kSilu,
                                   .residual = res.data() + std::ptrdiff_t(row0) * n,
                                   .ldr = n,
                                   .c = c,
                                   .ldc = n,
                                   .precision = prec});
                    }
                };
                for (bool gated : {false, true}) {
                    std::vector<float> alone(std::size_t(kMaxRows) * n);
                    for (int i = 0; i < kMaxRows; ++i) run(i, 1, gated, alone.data() + i * n);
                    for (int m : {2, 3, 4, 5, 7, 8, 16, 31, 32}) {
                        std::vector<float> c(std::size_t(m) * n);
                        const int row0 = kMaxRows - m;  // rows at other offsets than alone's
                        run(row0, m, gated, c.data());
                        for (int i = 0; i < m; ++i) {
                            ASSERT_EQ(std::memcmp(c.data() + std::size_t(i) * n,
                                                  alone.data() + std::size_t(row0 + i) * n,
                                                  sizeof(float) * n),
                                      0)
                                << "m=" << m << " row " << i << " n=" << n << " k=" << k
                                << (gated ? " gated" : "") << " bf16 weights "
                                << (wt == WeightType::kBF16) << " bf16 precision "
                                << (prec == GemmPrecision::kBF16);
                        }
                    }
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, GemmRowInvariance, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                             return std::string(isa_name(info.param));
                         });

}  // namespace
}  // namespace qvl::kernels
