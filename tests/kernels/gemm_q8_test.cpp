// Int8-weight GEMM (kernels/gemm_q8.h) on every ISA tier (the AVX2 kernels both on int8
// multiplies and on f32 FMAs) against the double-precision reference: odd shapes (k not a multiple
// of the block, n not a multiple of the panel, m = 1..40), misaligned activations and strides,
// every epilogue, the gated pair, all block sizes; plus the properties the runtime relies on: tiers
// agree bit for bit, and a row's result never depends on m, on its neighbours or on the thread
// split (batch invariance).
#include "kernels/gemm_q8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
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

using test_util::random_vec;
using Case = test_util::QuantCase;

// A quantized copy of a random f32 [n, k] matrix (stride k + 3), with its storage.
struct QWeights {
    std::vector<float> src;
    std::vector<std::int8_t> q;
    std::vector<float> scales;
    Q8Matrix m;
    QWeights(int n, int k, int block, std::mt19937& rng) {
        src = random_vec(std::size_t(n) * std::size_t(k + 3) + 1, rng, 0.05f);
        q.resize(q8_data_bytes(n, k, block));
        scales.resize(q8_scale_bytes(n, k, block) / sizeof(float));
        m = q8_describe(n, k, block, q.data(), scales.data());
        q8_quantize_panels(src.data(), WeightType::kF32, k + 3, m, 0, m.panels);
    }
};

// A tier, and for the AVX2 kernels which of their two ways to the block sums (isa.h
// q8_fma_for_gemm: int8 multiplies or f32 FMAs, from kQ8FmaMinRows rows) runs.
struct Q8Kernel {
    Isa isa;
    bool fma;
};

std::vector<Q8Kernel> q8_kernels() {
    std::vector<Q8Kernel> out;
    for (Isa isa : all_isas()) {
        out.push_back({isa, false});
        if (isa == Isa::kAvx2 || isa == Isa::kAvx512) out.push_back({isa, true});
    }
    return out;
}

std::string q8_kernel_label(const Q8Kernel& k) {
    return std::string(isa_name(k.isa)) + (k.fma ? "_fma" : "");
}

std::string q8_kernel_name(const ::testing::TestParamInfo<Q8Kernel>& info) {
    return q8_kernel_label(info.param);
}

// gtest prints a parameter as its bytes otherwise, padding included.
void PrintTo(const Q8Kernel& k, std::ostream* os) { *os << q8_kernel_label(k); }

class GemmQ8Test : public ::testing::TestWithParam<Q8Kernel> {
  protected:
    void SetUp() override {
        QVL_SKIP_IF_UNSUPPORTED(isa());
        set_q8_fma_for_gemm(GetParam().fma);
    }
    void TearDown() override { set_q8_fma_for_gemm(saved_policy_); }
    Isa isa() const { return GetParam().isa; }

  private:
    bool saved_policy_ = q8_fma_for_gemm();
};

void run_case(const Case& c, Isa isa, std::mt19937& rng) {
    QWeights w(c.n, c.k, c.block, rng), w2(c.n, c.k, c.block, rng);
    test_util::check_against_reference(c, isa, w.m, w2.m, rng);
}

TEST_P(GemmQ8Test, OddShapesMatchReference) {
    std::mt19937 rng(1234);
    for (int block : {32, 64, 128})
        for (int m : {1, 2, 3, 7, 17, 40})
            for (int n : {1, 3, 17, 31, 70})
                for (int k : {1, 7, 31, 33, 100, 257})
                    run_case({m, n, k, block, GemmActivation::kNone, false, false, false}, isa(),
                             rng);
}

TEST_P(GemmQ8Test, EpiloguesAndGated) {
    std::mt19937 rng(99);
    for (GemmActivation act :
         {GemmActivation::kNone, GemmActivation::kSilu, GemmActivation::kGeluTanh})
        for (int m : {1, 5, 33}) run_case({m, 45, 300, 64, act, true, true, false}, isa(), rng);
    for (int m : {1, 4, 9, 40}) run_case({m, 37, 129, 32, {}, false, false, true}, isa(), rng);
}

TEST_P(GemmQ8Test, TextShapesMatchReference) {
    // Real decoder shapes on a column window (the reference is slow): k = 2048 and 6144.
    std::mt19937 rng(5);
    for (int k : {2048, 6144})
        for (int m : {3, 20}) run_case({m, 40, k, 64, {}, false, true, false}, isa(), rng);
}

// Row-long blocks (q8_row_block: one scale per output channel and per activation row, the
// vision tower's int8 weights), k shorter than, equal to and not a multiple of the block.
TEST_P(GemmQ8Test, RowBlocksMatchReference) {
    std::mt19937 rng(31);
    for (int k : {100, 257, 1024, 1100})
        for (int m : {1, 5, 40})
            run_case({m, 37, k, q8_row_block(k), GemmActivation::kGeluTanh, true, true, false},
                     isa(), rng);
    run_case({6, 33, 700, 256, {}, false, false, true}, isa(), rng);
}

// Every tier equals the scalar tier bit for bit (same quantized activations, same f32 chain).
TEST_P(GemmQ8Test, BitIdenticalToScalarTier) {
    std::mt19937 rng(7);
    for (int block : {32, 128, 1024}) {
        const int m = 37, n = 53, k = 333;  // more than kQ8FmaMinRows rows, two chunks of k
        QWeights w(n, k, block, rng);
        std::vector<float> a = random_vec(std::size_t(m) * k, rng);
        std::vector<float> c1(std::size_t(m) * n), c2(c1.size());
        GemmArgs g{.m = m,
                   .n = n,
                   .k = k,
                   .a = a.data(),
                   .lda = k,
                   .w = &w.m,
                   .w_type = WeightType::kQ8,
                   .c = c1.data(),
                   .ldc = n};
        kernels_for(isa()).gemm(g);
        g.c = c2.data();
        kernels_for(Isa::kScalar).gemm(g);
        for (std::size_t i = 0; i < c1.size(); ++i) ASSERT_EQ(c1[i], c2[i]) << "element " << i;
    }
}

// Weight quantization gives the same bytes and scales whichever tier's row quantizer runs it.
TEST_P(GemmQ8Test, WeightQuantizationSameOnEveryTier) {
    std::mt19937 rng(21);
    const int n = 37, k = 301;
    const std::vector<float> src = random_vec(std::size_t(n) * k, rng);
    for (int block : {32, 64, 128}) {
        std::vector<std::int8_t> q1(q8_data_bytes(n, k, block)), q2(q1.size());
        std::vector<float> s1(q8_scale_bytes(n, k, block) / sizeof(float)), s2(s1.size());
        const Q8Matrix m1 = q8_describe(n, k, block, q1.data(), s1.data());
        const Q8Matrix m2 = q8_describe(n, k, block, q2.data(), s2.data());
        q8_quantize_panels(src.data(), WeightType::kF32, k, m1, 0, m1.panels, Isa::kScalar);
        q8_quantize_panels(src.data(), WeightType::kF32, k, m2, 0, m2.panels, isa());
        EXPECT_EQ(q1, q2) << "block " << block;
        EXPECT_EQ(s1, s2) << "block " << block;
    }
}

// The rows' sums of squares (Q8RowSquares) against the same sums taken from the stored int8
// data and the source, on a shape with a partial panel and a partial block, bf16 and f32
// sources; the same bits on every tier and for any panel split; rows outside the quantized
// panels untouched.
TEST_P(GemmQ8Test, RowSquaresMatchTheStoredQuantization) {
    std::mt19937 rng(23);
    const int n = 37, k = 301, ld = k + 5;
    const std::vector<float> f32 = random_vec(std::size_t(n) * ld, rng, 0.3f);
    std::vector<std::uint16_t> bf16(f32.size());
    for (std::size_t i = 0; i < f32.size(); ++i) bf16[i] = base::f32_to_bf16(f32[i]).bits;
    for (const WeightType type : {WeightType::kF32, WeightType::kBF16}) {
        const void* src = type == WeightType::kF32 ? static_cast<const void*>(f32.data())
                                                   : static_cast<const void*>(bf16.data());
        const auto value = [&](int r, int c) {
            const std::size_t at = std::size_t(r) * ld + std::size_t(c);
            return type == WeightType::kF32 ? double(f32[at])
                                            : double(base::bf16_to_f32({bf16[at]}));
        };
        for (int block : {32, 64}) {
            std::vector<std::int8_t> q(q8_data_bytes(n, k, block));
            std::vector<float> sc(q8_scale_bytes(n, k, block) / sizeof(float));
            const Q8Matrix m = q8_describe(n, k, block, q.data(), sc.data());
            std::vector<double> sums(3 * n, -1.0);
            const Q8RowSquares sq{sums.data(), sums.data() + n, sums.data() + 2 * n};
            q8_quantize_panels(src, type, ld, m, 1, m.panels, isa(), &sq);  // not panel 0
            for (int r = 0; r < n; ++r) {
                if (r < kQ8Panel) {
                    EXPECT_EQ(sq.error[r], -1.0) << "row " << r;
                    continue;
                }
                double err = 0.0, s = 0.0, w = 0.0;
                for (int c = 0; c < k; ++c) {
                    const double dq = double(q8_weight(m, r, c)) * q8_scale(m, r, c / block);
                    err += (dq - value(r, c)) * (dq - value(r, c));
                    s += value(r, c) * value(r, c);
                    w += dq * dq;
                }
                ASSERT_GT(err, 0.0);
                EXPECT_NEAR(sq.error[r], err, 1e-12 * err) << "row " << r << " block " << block;
                EXPECT_NEAR(sq.source[r], s, 1e-12 * s) << "row " << r;
                EXPECT_NEAR(sq.dequantized[r], w, 1e-12 * w) << "row " << r;
            }
            // Panel by panel on the scalar tier: the same bits.
            std::vector<double> sums2(3 * n, -1.0);
            const Q8RowSquares sq2{sums2.data(), sums2.data() + n, sums2.data() + 2 * n};
            for (int p = 1; p < m.panels; ++p)
                q8_quantize_panels(src, type, ld, m, p, p + 1, Isa::kScalar, &sq2);
            EXPECT_EQ(sums, sums2) << "block " << block;
        }
    }
}

// Batch invariance: each row alone, any window of rows, and any task split give the very bits
// of the full m = 40 product (the GEMV/GEMM boundary at m = 32 included).
TEST_P(GemmQ8Test, RowResultDoesNotDependOnBatch) {
    std::mt19937 rng(11);
    const int m = 40, n = 150, k = 2100;
    QWeights w(n, k, 64, rng);
    std::vector<float> a = random_vec(std::size_t(m) * k, rng);
    std::vector<float> full(std::size_t(m) * n);
    GemmArgs g{.m = m,
               .n = n,
               .k = k,
               .a = a.data(),
               .lda = k,
               .w = &w.m,
               .w_type = WeightType::kQ8,
               .c = full.data(),
               .ldc = n};
    kernels_for(isa()).gemm(g);
    for (int tasks : {2, 3, 7}) {
        std::vector<float> split(full.size());
        GemmArgs s = g;
        s.c = split.data();
        for (int t = 0; t < tasks; ++t) kernels_for(isa()).gemm_task(s, t, tasks);
        ASSERT_EQ(split, full) << tasks << " tasks";
    }
    for (int r0 : {0, 5, 31})
        for (int rows : {1, 2, 9}) {
            std::vector<float> part(std::size_t(rows) * n);
            GemmArgs s = g;
            s.m = rows;
            s.a = a.data() + std::ptrdiff_t(r0) * k;
            s.c = part.data();
            kernels_for(isa()).gemm(s);
            for (int i = 0; i < rows; ++i)
                for (int j = 0; j < n; ++j)
                    ASSERT_EQ(part[std::size_t(i * n + j)], full[std::size_t((r0 + i) * n + j)])
                        << "row " << r0 + i << " computed with " << rows << " rows";
        }
}

// Activations quantized once for every column task (the shared A of kernels/gemm.h) give the
// bits of each task quantizing its own rows, packed in any order and whatever the task split;
// the tasks read them (spoiling the buffer changes the output).
TEST_P(GemmQ8Test, SharedActivationsGiveTheSameBits) {
    std::mt19937 rng(17);
    const KernelTable& table = kernels_for(isa());
    for (const bool gated : {false, true}) {
        const int m = 77, n = 300, k = 333;
        QWeights w(n, k, 64, rng), w2(n, k, 64, rng);
        std::vector<float> a = random_vec(std::size_t(m) * k, rng);
        std::vector<float> bias = random_vec(std::size_t(n), rng);
        std::vector<float> want(std::size_t(m) * n), got(want.size());
        GemmArgs g{.m = m,
                   .n = n,
                   .k = k,
                   .a = a.data(),
                   .lda = k,
                   .w = &w.m,
                   .w_up = gated ? &w2.m : nullptr,
                   .w_type = WeightType::kQ8,
                   .bias = gated ? nullptr : bias.data(),
                   .c = want.data(),
                   .ldc = n};
        const int nt = gemm_num_tasks(g, 4);
        for (int t = 0; t < nt; ++t) table.gemm_task(g, t, nt);
        const std::size_t bytes = table.gemm_shared_a_bytes(g, nt);
        ASSERT_GT(bytes, 0u) << "several column tasks over the same rows";
        base::AlignedBuffer buf = base::AlignedBuffer::allocate(bytes, "test", false).value();
        GemmArgs s = g;
        s.c = got.data();
        s.packed_a = buf.data();
        for (const int np : {1, 2, 3}) {
            std::fill(got.begin(), got.end(), -1.0f);
            std::fill_n(buf.data(), bytes, std::byte{5});  // nothing left from the last split
            for (int t = np - 1; t >= 0; --t) table.gemm_pack_a_task(s, t, np);
            for (int t = 0; t < nt; ++t) table.gemm_task(s, t, nt);
            ASSERT_EQ(got, want) << np << " packing tasks" << (gated ? ", gated" : "");
        }
        std::fill_n(buf.data(), bytes, std::byte{3});
        for (int t = 0; t < nt; ++t) table.gemm_task(s, t, nt);
        EXPECT_NE(got, want);
    }
}

TEST(GemmQ8, QuantizedWeightsRoundTrip) {
    std::mt19937 rng(3);
    const int n = 19, k = 77;
    QWeights w(n, k, 32, rng);
    for (int j = 0; j < n; ++j)
        for (int kk = 0; kk < k; ++kk) {
            const double x = w.src[std::size_t(j) * (k + 3) + kk];
            const double d = q8_scale(w.m, j, kk / 32);
            EXPECT_LE(std::fabs(q8_weight(w.m, j, kk) * d - x), 0.5 * d * (1 + 1e-6) + 1e-30);
        }
    // Padding past k and past n is zero.
    EXPECT_EQ(q8_weight(w.m, 0, 95), 0);
    EXPECT_EQ(q8_scale(w.m, 31, 0), 0.0f);
}

TEST(GemmQ8, RejectsBadBlock) {
    EXPECT_FALSE(q8_block_ok(48));
    EXPECT_FALSE(q8_block_ok(192));
    EXPECT_FALSE(q8_block_ok(kQ8MaxBlock + 128));
    EXPECT_TRUE(q8_block_ok(64));
    EXPECT_TRUE(q8_block_ok(1024));
    EXPECT_EQ(q8_row_block(1), 128);
    EXPECT_EQ(q8_row_block(1024), 1024);
    EXPECT_EQ(q8_row_block(1025), 1152);
}

TEST(GemmQ8, FmaPolicyIsAmdFamily17hOnly) {
    EXPECT_TRUE(q8_fma_beats_int8(/*cpu_is_amd=*/true, /*cpu_family=*/0x17));
    EXPECT_FALSE(q8_fma_beats_int8(true, 0x19));
    EXPECT_FALSE(q8_fma_beats_int8(true, 0x1a));
    EXPECT_FALSE(q8_fma_beats_int8(false, 0x17));
    EXPECT_FALSE(q8_fma_beats_int8(false, 6));
}

INSTANTIATE_TEST_SUITE_P(AllIsas, GemmQ8Test, ::testing::ValuesIn(q8_kernels()), q8_kernel_name);

}  // namespace
}  // namespace qvl::kernels
