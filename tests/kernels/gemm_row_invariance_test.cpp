// Row invariance of the products: every output row is bit-identical whatever the other rows are
// and however many there are (the streaming path for m <= 32 and the packed path above it
// alike), for any thread split, on every ISA tier, weight type and precision, plain and gated.
// The runtime's batch invariance (a sequence's logits do not depend on the batch) and its exact
// prefix reuse (a suffix prefilled after cached rows, or a decoded token's keys, equal a cold
// prefill's) rest on this.
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
#include "kernels/weight_panels.h"
#include "support/cpu_skip.h"

namespace qvl::kernels {
namespace {

constexpr int kMaxRows = 160;  // past the streaming limit (32) and the packed row blocks

class GemmRowInvariance : public ::testing::TestWithParam<Isa> {
  protected:
    void SetUp() override { QVL_SKIP_UNLESS_CPU(GetParam()); }
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
        std::vector<std::uint32_t> wp(panel_bytes(n, k) / 4), wp2(wp.size());
        pack_panels(wb.data(), k, n, k, 0, panel_count(n), wp.data());
        pack_panels(wb2.data(), k, n, k, 0, panel_count(n), wp2.data());
        for (WeightType wt : {WeightType::kBF16, WeightType::kF32, WeightType::kBF16Panels}) {
            const bool panels = wt == WeightType::kBF16Panels;
            const void* w = panels                    ? static_cast<const void*>(wp.data())
                            : wt == WeightType::kBF16 ? static_cast<const void*>(wb.data())
                                                      : static_cast<const void*>(wf.data());
            const void* w2 = panels                    ? static_cast<const void*>(wp2.data())
                             : wt == WeightType::kBF16 ? static_cast<const void*>(wb2.data())
                                                       : static_cast<const void*>(wf2.data());
            const std::ptrdiff_t ldw = panels ? panel_pairs(k) : k;
            for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
                // Row i alone (M = 1, reading row i of A) is the reference for every M.
                auto run = [&](int row0, int m, bool gated, float* c, int tasks = 1) {
                    const KernelTable& table = kernels_for(GetParam());
                    auto go = [&](const GemmArgs& g) {
                        const int nt = gemm_num_tasks(g, tasks);
                        for (int t = nt - 1; t >= 0; --t) table.gemm_task(g, t, nt);
                    };
                    if (gated) {
                        go({.m = m,
                            .n = n,
                            .k = k,
                            .a = a.data() + std::ptrdiff_t(row0) * k,
                            .lda = k,
                            .w = w,
                            .w_up = w2,
                            .ldw = ldw,
                            .w_type = wt,
                            .c = c,
                            .ldc = n,
                            .precision = prec});
                    } else {
                        go({.m = m,
                            .n = n,
                            .k = k,
                            .a = a.data() + std::ptrdiff_t(row0) * k,
                            .lda = k,
                            .w = w,
                            .ldw = ldw,
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
                    for (auto [m, tasks] : {std::pair{2, 1},
                                            {3, 3},
                                            {4, 1},
                                            {5, 2},
                                            {7, 1},
                                            {8, 4},
                                            {16, 1},
                                            {31, 2},
                                            {32, 1},
                                            {33, 1},
                                            {45, 3},
                                            {100, 1},
                                            {150, 4}}) {
                        std::vector<float> c(std::size_t(m) * n);
                        const int row0 = kMaxRows - m;  // rows at other offsets than alone's
                        run(row0, m, gated, c.data(), tasks);
                        for (int i = 0; i < m; ++i) {
                            ASSERT_EQ(std::memcmp(c.data() + std::size_t(i) * n,
                                                  alone.data() + std::size_t(row0 + i) * n,
                                                  sizeof(float) * n),
                                      0)
                                << "m=" << m << " tasks " << tasks << " row " << i << " n=" << n
                                << " k=" << k << (gated ? " gated" : "") << " weight type "
                                << int(wt) << " bf16 precision " << (prec == GemmPrecision::kBF16);
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
