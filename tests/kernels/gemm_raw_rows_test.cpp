// Small-m products on bf16 weights as stored ([n, k] rows, WeightType::kBF16), which the
// streaming path reads without packing (kernels/x86/gemm_panel_stream.h: registers for up to 4
// rows on AVX-512, an L1 panel a chunk at a time otherwise): every output is bit-identical to the
// same product on the load-time panels of the same weights (the logits screen's full products
// must give the screened rows' bits), and close to the scalar reference. Odd n and k, rows of
// a stride above k, every m of the streaming path, thread splits.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "kernel_test_util.h"
#include "kernels/gemm.h"
#include "kernels/gemm_internal.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/weight_panels.h"

namespace qvl::kernels {
namespace {

class GemmRawRows : public ::testing::TestWithParam<Isa> {
  protected:
    void SetUp() override { QVL_SKIP_IF_UNSUPPORTED(GetParam()); }
};

void run(const KernelTable& table, const GemmArgs& g, int threads) {
    const int nt = gemm_num_tasks(g, threads);
    for (int t = nt - 1; t >= 0; --t) table.gemm_task(g, t, nt);
}

TEST_P(GemmRawRows, BitIdenticalToPanelsAndCloseToReference) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    const KernelTable& table = kernels_for(GetParam());
    // (n, k, ldw): n not a multiple of 16 or 64, k odd and below one block of 32, a stride past
    // k, and the lm_head's k.
    struct Shape {
        int n, k, ldw;
    };
    for (const Shape s :
         {Shape{1, 1, 1}, Shape{17, 33, 33}, Shape{67, 300, 307}, Shape{130, 77, 80},
          Shape{200, 31, 31}, Shape{40, 101, 128}, Shape{83, 2048, 2048}}) {
        const int max_m = detail::kGemvMaxM;
        std::vector<float> a(std::size_t(max_m) * s.k), bias(static_cast<std::size_t>(s.n));
        for (float& x : a) x = d(rng);
        for (float& x : bias) x = d(rng);
        std::vector<std::uint16_t> packed(std::size_t(s.n) * s.k);
        for (std::uint16_t& x : packed) x = base::f32_to_bf16(d(rng)).bits;
        std::vector<std::uint32_t> panels(panel_bytes(s.n, s.k) / 4);
        pack_panels(packed.data(), s.k, s.n, s.k, 0, panel_count(s.n), panels.data());
        // The rows start `offset` elements past a cache line (the 2B checkpoint's lm_head is 24
        // bytes past one), with a NaN before them and in each row's padding past k: a kernel
        // that multiplies one shows it.
        for (int offset : {0, 12, 1}) {
            std::vector<std::uint16_t> storage(std::size_t(s.n) * s.ldw + 64, 0x7fc0);
            const std::size_t line =
                (64 - reinterpret_cast<std::uintptr_t>(storage.data()) % 64) % 64 / 2;
            std::uint16_t* w = storage.data() + line + offset;
            for (int r = 0; r < s.n; ++r) {
                std::copy_n(packed.data() + std::size_t(r) * s.k, s.k, w + std::size_t(r) * s.ldw);
            }
            for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
                for (int m : {1, 2, 3, 4, 5, 7, 8, 13, max_m}) {
                    for (int threads : {1, 3}) {
                        std::vector<float> raw(std::size_t(m) * s.n), pan(raw.size()),
                            ref(raw.size());
                        const GemmArgs g{.m = m,
                                         .n = s.n,
                                         .k = s.k,
                                         .a = a.data(),
                                         .lda = s.k,
                                         .w = w,
                                         .ldw = s.ldw,
                                         .w_type = WeightType::kBF16,
                                         .bias = bias.data(),
                                         .c = raw.data(),
                                         .ldc = s.n,
                                         .precision = prec};
                        run(table, g, threads);
                        GemmArgs gp = g;
                        gp.w = panels.data();
                        gp.ldw = panel_pairs(s.k);
                        gp.w_type = WeightType::kBF16Panels;
                        gp.c = pan.data();
                        run(table, gp, 1);
                        GemmArgs gr = g;
                        gr.c = ref.data();
                        ref::gemm_f32(gr);
                        const std::string what =
                            "n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                            " offset=" + std::to_string(offset) + " m=" + std::to_string(m) +
                            " threads=" + std::to_string(threads) +
                            " bf16=" + std::to_string(prec == GemmPrecision::kBF16);
                        for (std::size_t i = 0; i < raw.size(); ++i) {
                            ASSERT_EQ(std::bit_cast<std::uint32_t>(raw[i]),
                                      std::bit_cast<std::uint32_t>(pan[i]))
                                << what << " at " << i << ": " << raw[i] << " vs panels " << pan[i];
                        }
                        // The reference sums in another order (and rounds A the same way):
                        // errors of the sums' size (about 1), not of the cancelled result's.
                        EXPECT_TRUE(testing::all_close(raw.data(), ref.data(), raw.size(),
                                                       1e-4 * std::sqrt(double(s.k)), 1.0))
                            << what;
                    }
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, GemmRawRows, ::testing::ValuesIn(all_isas()),
                         testing::isa_param_name);

}  // namespace
}  // namespace qvl::kernels
