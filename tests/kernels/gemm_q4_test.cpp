// 4-bit-weight GEMM (kernels/gemm_q4.h) on every ISA tier against the double-precision reference
// (ref::gemm_q8 reads the 4-bit values through q8_weight/q8_scale): odd shapes (k not a multiple
// of the block, n not a multiple of the panel, m = 1..40), misaligned activations and strides,
// epilogues, the gated pair, all block sizes; tiers agree bit for bit; a row's result never
// depends on m, its neighbours, the thread split or the shared activations (batch invariance);
// the quantization keeps its formula and the half conversion rounds to nearest even.
#include "kernels/gemm_q4.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/bf16.h"
#include "gemm_quant_test_util.h"
#include "kernel_test_util.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels {
namespace {

using test_util::QuantCase;
using test_util::random_vec;

// A 4-bit copy of a random f32 [n, k] matrix (stride k + 3), with its storage.
struct Q4Weights {
    std::vector<float> src;
    std::vector<std::uint8_t> q;
    std::vector<std::uint16_t> scales;
    Q8Matrix m;
    Q4Weights(int n, int k, int block, std::mt19937& rng) {
        src = random_vec(std::size_t(n) * std::size_t(k + 3) + 1, rng, 0.05f);
        q.resize(q4_data_bytes(n, k, block));
        scales.resize(q4_scale_bytes(n, k, block) / sizeof(std::uint16_t));
        m = q4_describe(n, k, block, q.data(), scales.data());
        q4_quantize_panels(src.data(), WeightType::kF32, k + 3, m, 0, m.panels);
    }
};

class GemmQ4Test : public ::testing::TestWithParam<Isa> {
  protected:
    void SetUp() override { QVL_SKIP_IF_UNSUPPORTED(GetParam()); }
    const KernelTable& table() const { return kernels_for(GetParam()); }
};

void run_case(const QuantCase& c, Isa isa, std::mt19937& rng) {
    Q4Weights w(c.n, c.k, c.block, rng), w2(c.n, c.k, c.block, rng);
    test_util::check_against_reference(c, isa, w.m, w2.m, rng);
}

TEST_P(GemmQ4Test, OddShapesMatchReference) {
    std::mt19937 rng(1234);
    for (int block : {32, 64, 128})
        for (int m : {1, 2, 3, 7, 17, 40})
            for (int n : {1, 17, 31, 70})
                for (int k : {1, 7, 33, 100, 257})
                    run_case({m, n, k, block, GemmActivation::kNone, false, false, false},
                             GetParam(), rng);
}

TEST_P(GemmQ4Test, EpiloguesGatedAndTextShapes) {
    std::mt19937 rng(99);
    for (GemmActivation act : {GemmActivation::kNone, GemmActivation::kSilu})
        for (int m : {1, 5, 33})
            run_case({m, 45, 300, 32, act, true, true, false}, GetParam(), rng);
    for (int m : {1, 4, 9, 40}) run_case({m, 37, 129, 32, {}, false, false, true}, GetParam(), rng);
    for (int k : {2048, 6144}) run_case({3, 40, k, 32, {}, false, true, false}, GetParam(), rng);
}

// Every tier equals the scalar tier bit for bit (plain products), and a row's result is the same
// for any m, any
// window of rows, any task split and with the activations quantized once for all tasks.
TEST_P(GemmQ4Test, BitIdenticalAcrossTiersBatchesAndSplits) {
    std::mt19937 rng(7);
    const int m = 40, n = 150, k = 333;
    for (const bool gated : {false, true}) {
        Q4Weights w(n, k, 32, rng), w2(n, k, 32, rng);
        std::vector<float> a = random_vec(std::size_t(m) * k, rng);
        std::vector<float> full(std::size_t(m) * n), other(full.size());
        GemmArgs g{.m = m,
                   .n = n,
                   .k = k,
                   .a = a.data(),
                   .lda = k,
                   .w = &w.m,
                   .w_up = gated ? &w2.m : nullptr,
                   .w_type = WeightType::kQ8,
                   .c = full.data(),
                   .ldc = n};
        table().gemm(g);
        GemmArgs s = g;
        s.c = other.data();
        kernels_for(Isa::kScalar).gemm(s);
        // The sums are the same bits on every tier; the epilogue is the tier's own (silu of the
        // gated pair vectorised), as for int8 weights (kernels/gemm_q8.h).
        if (!gated) {
            ASSERT_EQ(other, full) << "scalar tier";
        }
        for (int tasks : {2, 3, 7}) {
            std::fill(other.begin(), other.end(), 0.0f);
            for (int t = 0; t < tasks; ++t) table().gemm_task(s, t, tasks);
            ASSERT_EQ(other, full) << tasks << " tasks";
        }
        for (int r0 : {0, 5, 31})
            for (int rows : {1, 2, 3, 9}) {
                std::vector<float> part(std::size_t(rows) * n);
                GemmArgs p = g;
                p.m = rows;
                p.a = a.data() + std::ptrdiff_t(r0) * k;
                p.c = part.data();
                table().gemm(p);
                for (int i = 0; i < rows * n; ++i)
                    ASSERT_EQ(part[std::size_t(i)], full[std::size_t(r0 * n + i)])
                        << "rows " << r0 << "+" << rows;
            }
        const int nt = gemm_num_tasks(g, 4);
        const std::size_t bytes = table().gemm_shared_a_bytes(g, nt);
        ASSERT_GT(bytes, 0u);
        base::AlignedBuffer buf = base::AlignedBuffer::allocate(bytes, "test", false).value();
        s.packed_a = buf.data();
        std::fill(other.begin(), other.end(), 0.0f);
        for (int t = 1; t >= 0; --t) table().gemm_pack_a_task(s, t, 2);
        for (int t = 0; t < nt; ++t) table().gemm_task(s, t, nt);
        ASSERT_EQ(other, full) << "shared activations";
    }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, GemmQ4Test, ::testing::ValuesIn(all_isas()),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

// Each weight is its block's half scale times q in [-8, 7], the block's extreme maps to -8, the
// rest round to nearest; padding past k and n is zero; bf16 sources give the same as their f32.
TEST(GemmQ4, QuantizationFormula) {
    std::mt19937 rng(3);
    const int n = 19, k = 77, block = 32;
    Q4Weights w(n, k, block, rng);
    for (int j = 0; j < n; ++j) {
        for (int b = 0; b < w.m.k_blocks; ++b) {
            float ext = 0.0f;
            for (int kk = b * block; kk < std::min(k, (b + 1) * block); ++kk) {
                const float x = w.src[std::size_t(j) * (k + 3) + std::size_t(kk)];
                if (std::fabs(x) > std::fabs(ext)) ext = x;
            }
            const float d = q8_scale(w.m, j, b);
            EXPECT_EQ(d, base::f16_to_f32(f32_to_f16(ext / -8.0f)));
            for (int kk = b * block; kk < std::min(k, (b + 1) * block); ++kk) {
                const float x = w.src[std::size_t(j) * (k + 3) + std::size_t(kk)];
                const int q = q8_weight(w.m, j, kk);
                EXPECT_EQ(q, int(std::clamp(std::nearbyint(x / d), -8.0f, 7.0f))) << j << "," << kk;
            }
        }
    }
    EXPECT_EQ(q8_weight(w.m, 0, 95), 0);
    EXPECT_EQ(q8_scale(w.m, 31, 0), 0.0f);
    std::vector<std::uint16_t> bf(std::size_t(n) * (k + 3));
    std::vector<float> rounded(bf.size());
    for (std::size_t i = 0; i < bf.size(); ++i) {
        bf[i] = base::f32_to_bf16(w.src[i]).bits;
        rounded[i] = base::bf16_to_f32({bf[i]});
    }
    std::vector<std::uint8_t> q1(w.q.size()), q2(w.q.size());
    std::vector<std::uint16_t> s1(w.scales.size()), s2(w.scales.size());
    const Q8Matrix m1 = q4_describe(n, k, block, q1.data(), s1.data());
    const Q8Matrix m2 = q4_describe(n, k, block, q2.data(), s2.data());
    q4_quantize_panels(bf.data(), WeightType::kBF16, k + 3, m1, 0, 1);
    q4_quantize_panels(bf.data(), WeightType::kBF16, k + 3, m1, 1, m1.panels);
    q4_quantize_panels(rounded.data(), WeightType::kF32, k + 3, m2, 0, m2.panels);
    EXPECT_EQ(q1, q2);
    EXPECT_EQ(s1, s2);
}

// The SIMD quantizers (load time) write the scalar quantizer's bytes, scales and nibbles, on odd
// shapes and every block size, from f32 and bf16 sources with the values that decide the format's
// corner cases: ties of +e and -e (the first wins), NaN (never the extreme, quantized to 0),
// infinities and scales that overflow (a zero block), scales that are half subnormals, zeros.
TEST(GemmQ4, QuantizerTiersGiveTheScalarBytes) {
    std::mt19937 rng(11);
    int compared = 0;
    for (Isa isa : all_isas()) {
        if (isa == Isa::kScalar || !isa_supported(isa)) continue;
        for (int block : {32, 64, 128, 256})
            for (int n : {1, 17, 33})
                for (int k : {1, 31, 77, 300, 1027}) {
                    const std::ptrdiff_t ld = k + 3;
                    std::vector<float> src =
                        random_vec(std::size_t(n) * std::size_t(ld), rng, 0.05f);
                    const float specials[] = {NAN,   INFINITY, -INFINITY, 1e6f,  -0.0f, 0.0f,
                                              3e-7f, -3e-7f,   2e-8f,     0.25f, -0.25f};
                    std::uniform_int_distribution<std::size_t> at(0, src.size() - 1);
                    for (int i = 0; i < 2 * n; ++i)
                        src[at(rng)] = specials[std::size_t(i) % std::size(specials)];
                    for (int j = 0; j < n; j += 3) {  // a row of tiny values: subnormal scales
                        for (int kk = 0; kk < k; ++kk) src[std::size_t(j * ld + kk)] *= 1e-5f;
                    }
                    if (n > 1) std::fill_n(src.begin() + ld, std::min(k, 40), 0.0f);
                    std::vector<std::uint16_t> bf(src.size());
                    for (std::size_t i = 0; i < bf.size(); ++i)
                        bf[i] = base::f32_to_bf16(src[i]).bits;
                    for (const bool from_bf16 : {false, true}) {
                        const void* w =
                            from_bf16 ? static_cast<const void*>(bf.data()) : src.data();
                        const WeightType type = from_bf16 ? WeightType::kBF16 : WeightType::kF32;
                        std::vector<std::uint8_t> q1(q4_data_bytes(n, k, block)), q2(q1.size());
                        std::vector<std::uint16_t> s1(q4_scale_bytes(n, k, block) / 2),
                            s2(s1.size());
                        const Q8Matrix m1 = q4_describe(n, k, block, q1.data(), s1.data());
                        const Q8Matrix m2 = q4_describe(n, k, block, q2.data(), s2.data());
                        q4_quantize_panels(w, type, ld, m1, 0, m1.panels, Isa::kScalar);
                        q4_quantize_panels(w, type, ld, m2, 0, 1, isa);
                        q4_quantize_panels(w, type, ld, m2, 1, m2.panels, isa);
                        ASSERT_EQ(q1, q2) << isa_name(isa) << " " << n << "x" << k << "/" << block;
                        ASSERT_EQ(s1, s2) << isa_name(isa) << " " << n << "x" << k << "/" << block;
                        ++compared;
                    }
                }
    }
    EXPECT_GT(compared, 0) << "no SIMD tier on this CPU";
}

// Every finite half survives the round trip, values halfway between neighbours go to the even
// one, and the range ends saturate to infinity or stay subnormal as IEEE says.
TEST(GemmQ4, HalfConversionRoundsToNearestEven) {
    for (std::uint32_t h = 0; h < 0x10000u; ++h) {
        if ((h & 0x7c00u) == 0x7c00u) continue;  // infinities and NaNs
        const float f = base::f16_to_f32(std::uint16_t(h));
        ASSERT_EQ(f32_to_f16(f), h) << h;
        if ((h & 0x7fffu) == 0x7bffu) continue;  // the largest finite: no next
        const float next = base::f16_to_f32(std::uint16_t(h + 1));
        const float mid = f + (next - f) / 2;  // exact in float
        ASSERT_EQ(f32_to_f16(mid), (h & 1u) ? h + 1 : h) << h;
    }
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00u);
    EXPECT_EQ(f32_to_f16(-1e-9f), 0x8000u);
    EXPECT_EQ(f32_to_f16(std::bit_cast<float>(0x7fc00000u)) & 0x7c00u, 0x7c00u);
}

}  // namespace
}  // namespace qvl::kernels
