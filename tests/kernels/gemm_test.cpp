// GEMM/GEMV against the double-precision reference on every ISA: odd sizes, real model shapes
// (on sampled column windows), unaligned pointers and strides, all epilogues, the gated pair,
// both weight types and precisions, in-place residual, k == 0, and bit-identical results for
// any thread count.
#include "kernels/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "base/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/gemm_run.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/weight_panels.h"
#include "support/cpu_skip.h"

namespace qvl::kernels {
namespace {

constexpr double kEps = 1.0 / (1 << 24);  // f32 unit roundoff

// A row-major matrix placed one element past its buffer start (breaking alignment), with a row
// stride larger than its width, and a buffer that ends exactly at its last element (so ASan
// sees any read past it).
template <class T>
struct Mat {
    int rows = 0, cols = 0;
    std::ptrdiff_t ld = 0;
    std::vector<T> buf;
    Mat(int r, int c, int pad = 3) : rows(r), cols(c), ld(c + pad) {
        buf.resize(r == 0 ? 1 : 1 + std::size_t(r - 1) * ld + c);
    }
    T* data() { return buf.data() + 1; }
    const T* data() const { return buf.data() + 1; }
    T& at(int i, int j) { return data()[std::ptrdiff_t(i) * ld + j]; }
    const T& at(int i, int j) const { return data()[std::ptrdiff_t(i) * ld + j]; }
};

void fill(std::vector<float>& v, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    for (float& x : v) x = d(rng);
}

// Weights in both storage types holding the same values (bf16-representable).
struct Weights {
    Mat<float> f32;
    Mat<std::uint16_t> bf16;
    std::vector<std::uint32_t> panels;  // the bf16 values in load-time panels, one word past
                                        // the buffer start (no alignment)
    Weights(int n, int k, std::mt19937& rng) : f32(n, k, 5), bf16(n, k, 5) {
        // xorshift: the real shapes need tens of millions of values quickly.
        std::uint64_t state = rng() | 1u;
        auto uniform = [&state] {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            return float(std::int64_t(state >> 11) - (std::int64_t(1) << 52)) * 0x1p-52f;
        };
        for (int j = 0; j < n; ++j) {
            for (int kk = 0; kk < k; ++kk) {
                const base::bf16 b = base::f32_to_bf16(uniform());
                bf16.at(j, kk) = b.bits;
                // f32 weights get an extra low-order perturbation so kBF16 precision must round.
                f32.at(j, kk) = base::bf16_to_f32(b) * (1.0f + 1e-3f * uniform());
            }
        }
        panels.resize(1 + panel_bytes(n, k) / sizeof(std::uint32_t));
        pack_panels(bf16.data(), bf16.ld, n, k, 0, panel_count(n), panels.data() + 1);
    }
    const void* ptr(WeightType t) const {
        if (t == WeightType::kBF16Panels) return panels.data() + 1;
        return t == WeightType::kBF16 ? static_cast<const void*>(bf16.data()) : f32.data();
    }
    std::ptrdiff_t ld(WeightType t) const {
        if (t == WeightType::kBF16Panels) return panel_pairs(bf16.cols);
        return t == WeightType::kBF16 ? bf16.ld : f32.ld;
    }
    double value(WeightType t, int j, int kk) const {
        return t != WeightType::kF32 ? base::bf16_to_f32(base::bf16{bf16.at(j, kk)})
                                     : f32.at(j, kk);
    }
};

// The random operands of one m x n x k product with every epilogue input: A, a residual, the
// gate and up weights and a bias, drawn in that order.
struct Operands {
    Mat<float> a, res;
    Weights w, w2;
    std::vector<float> bias;
    Operands(int m, int n, int k, std::mt19937& rng)
        : a(filled(Mat<float>(m, k), rng)),
          res(filled(Mat<float>(m, n), rng)),
          w(n, k, rng),
          w2(n, k, rng),
          bias(filled(std::vector<float>(std::size_t(n)), rng)) {}
    static Mat<float> filled(Mat<float> m, std::mt19937& rng) {
        fill(m.buf, rng);
        return m;
    }
    static std::vector<float> filled(std::vector<float> v, std::mt19937& rng) {
        fill(v, rng);
        return v;
    }
};

// Σ_k |a_ik · w_jk|: the scale of the rounding error of a length-k f32 sum.
double abs_dot(const GemmArgs& g, const Weights& w, int i, int j, int j0) {
    double s = 0.0;
    for (int kk = 0; kk < g.k; ++kk) {
        s += std::fabs(double(g.a[std::ptrdiff_t(i) * g.lda + kk]) * w.value(g.w_type, j0 + j, kk));
    }
    return s;
}

// f32 sums of length k err by at most about k·eps·Σ|a·w|; the activations have slope <= 1.13
// and are evaluated to within a few ulps.
void expect_close(const GemmArgs& g, const Weights& w, const Mat<float>& got,
                  const Mat<float>& want, int j0, const std::string& what) {
    int failures = 0;
    for (int i = 0; i < g.m; ++i) {
        for (int j = 0; j < g.n; ++j) {
            const double ref = want.at(i, j);
            // Adding bias and residual rounds at the scale of their magnitudes.
            const double scale = std::fabs(ref) + (g.bias != nullptr ? std::fabs(g.bias[j]) : 0) +
                                 (g.residual != nullptr ? std::fabs(g.residual[i * g.ldr + j]) : 0);
            const double tol =
                1.2 * (g.k + 8) * kEps * abs_dot(g, w, i, j, j0) + 8 * kEps * scale + 1e-30;
            const double err = std::fabs(double(got.at(i, j)) - ref);
            if (!(err <= tol) && failures++ < 5) {
                ADD_FAILURE() << what << " at (" << i << ", " << j << "): got " << got.at(i, j)
                              << " want " << ref << " tol " << tol;
            }
        }
    }
}

class GemmTest : public testing::GemmTierTest {};

struct Case {
    int m, n, k;
    WeightType w_type;
    GemmPrecision precision;
    GemmActivation act;
    bool bias, residual;
};

std::string describe(const Case& c) {
    return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
           " w=" +
           (c.w_type == WeightType::kBF16         ? "bf16"
            : c.w_type == WeightType::kBF16Panels ? "panels"
                                                  : "f32") +
           " prec=" + (c.precision == GemmPrecision::kBF16 ? "bf16" : "f32") +
           " act=" + std::to_string(int(c.act)) + " bias=" + std::to_string(c.bias) +
           " res=" + std::to_string(c.residual);
}

// Runs one case against the reference. With j0/n_full, the problem is a window of columns
// [j0, j0 + n) of a larger weight matrix (the real shapes, checked on a sample).
void run_case(const Case& c, Isa isa, std::mt19937& rng, int n_full = 0, int j0 = 0,
              const Weights* shared = nullptr) {
    if (n_full == 0) n_full = c.n;
    Mat<float> a(c.m, c.k);
    fill(a.buf, rng);
    const Weights own = shared != nullptr ? Weights(0, 0, rng) : Weights(n_full, c.k, rng);
    const Weights& w = shared != nullptr ? *shared : own;
    std::vector<float> bias(std::size_t(n_full) + 1);
    fill(bias, rng);
    Mat<float> res(c.m, c.n, 7);
    fill(res.buf, rng);
    Mat<float> got(c.m, c.n, 2), want(c.m, c.n, 2);
    fill(got.buf, rng);  // garbage the kernel must overwrite

    GemmArgs g{.m = c.m,
               .n = c.n,
               .k = c.k,
               .a = a.data(),
               .lda = a.ld,
               .w = w.ptr(c.w_type),
               .ldw = w.ld(c.w_type),
               .w_type = c.w_type,
               .bias = c.bias ? bias.data() + 1 : nullptr,
               .act = c.act,
               .residual = c.residual ? res.data() : nullptr,
               .ldr = res.ld,
               .c = want.data(),
               .ldc = want.ld,
               .precision = c.precision};
    GemmArgs full = g;  // the same with the full weight matrix, for the window
    if (c.w_type == WeightType::kBF16Panels) {
        // The reference reads the same values from the plain bf16 copy (a window need not
        // start at a panel boundary).
        g.w = w.ptr(WeightType::kBF16);
        g.ldw = w.ld(WeightType::kBF16);
        g.w_type = WeightType::kBF16;
    }
    g.w = static_cast<const char*>(g.w) +
          std::ptrdiff_t(j0) * g.ldw * (g.w_type == WeightType::kBF16 ? 2 : 4);
    if (g.bias != nullptr) g.bias += j0;
    ref::gemm_f32(g);
    if (c.w_type == WeightType::kBF16Panels) {
        g.w = w.ptr(c.w_type);
        g.ldw = w.ld(c.w_type);
        g.w_type = c.w_type;
    }
    if (n_full == c.n) {
        g.c = got.data();
        g.ldc = got.ld;
        kernels_for(isa).gemm(g);
    } else {
        // The kernel runs over all n_full columns; compare the window.
        Mat<float> all(c.m, n_full, 1);
        Mat<float> res_all(c.m, n_full, 1);
        for (int i = 0; i < c.m; ++i) {
            for (int j = 0; j < c.n; ++j) res_all.at(i, j0 + j) = res.at(i, j);
        }
        full.n = n_full;
        full.c = all.data();
        full.ldc = all.ld;
        if (full.residual != nullptr) {
            full.residual = res_all.data();
            full.ldr = res_all.ld;
        }
        kernels_for(isa).gemm(full);
        for (int i = 0; i < c.m; ++i) {
            for (int j = 0; j < c.n; ++j) got.at(i, j) = all.at(i, j0 + j);
        }
    }
    expect_close(g, w, got, want, j0, describe(c) + " " + isa_name(isa));
}

TEST_P(GemmTest, OddSizesAllEpilogues) {
    std::mt19937 rng(1234);
    const GemmActivation acts[] = {GemmActivation::kNone, GemmActivation::kGeluTanh,
                                   GemmActivation::kGeluErf, GemmActivation::kSilu};
    int index = 0;
    for (WeightType wt : {WeightType::kBF16, WeightType::kF32, WeightType::kBF16Panels}) {
        for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
            for (int m : {1, 3, 7, 8, 9, 16, 17, 31, 32, 33, 47, 100}) {
                for (int n : {1, 3, 17, 31, 100}) {
                    for (int k : {1, 3, 16, 17, 31, 100, 1000}) {
                        if (double(m) * n * k > 4e5) continue;
                        ++index;
                        const Case c{
                            m, n, k, wt, prec, acts[index % 4], index % 3 != 0, index % 2 == 0};
                        run_case(c, GetParam(), rng);
                    }
                }
            }
        }
    }
}

TEST_P(GemmTest, LargeOddShapes) {
    std::mt19937 rng(99);
    for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
        run_case({1000, 17, 31, WeightType::kBF16, prec, GemmActivation::kGeluTanh, true, true},
                 GetParam(), rng);
        run_case({31, 1000, 7, WeightType::kF32, prec, GemmActivation::kNone, false, true},
                 GetParam(), rng);
        run_case({17, 100, 1000, WeightType::kBF16, prec, GemmActivation::kSilu, true, false},
                 GetParam(), rng);
        run_case({1, 1000, 100, WeightType::kBF16, prec, GemmActivation::kGeluErf, true, true},
                 GetParam(), rng);
    }
}

// Every boundary of the packed path's blocking: row passes (of 224 or 240 rows), kMC row blocks and
// every remainder of the 14- and 6-row register panels, kNC (128 or 512) column blocks and
// 32/16-column panels, kKC k blocks (2048 for bf16 pairs, 1024 or 256 f32) with odd tails.
TEST_P(GemmTest, BlockingBoundaries) {
    std::mt19937 rng(4242);
    for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
        // Several row passes, each over several k blocks (the packed A of a pass is addressed per
        // k block); several k blocks on a plain block; several column blocks with a tail.
        run_case({1030, 3, 2101, WeightType::kBF16, prec, GemmActivation::kNone, true, true},
                 GetParam(), rng);
        run_case({1030, 3, 2101, WeightType::kBF16Panels, prec, GemmActivation::kNone, true, true},
                 GetParam(), rng);
        run_case({40, 300, 4101, WeightType::kBF16Panels, prec, GemmActivation::kSilu, true, true},
                 GetParam(), rng);
        run_case({5, 300, 4101, WeightType::kBF16Panels, prec, GemmActivation::kNone, true, false},
                 GetParam(), rng);
        run_case({40, 20, 2101, WeightType::kF32, prec, GemmActivation::kSilu, false, true},
                 GetParam(), rng);
        run_case({60, 300, 130, WeightType::kF32, prec, GemmActivation::kGeluTanh, true, false},
                 GetParam(), rng);
        for (int m = 33; m <= 46; ++m) {
            run_case({m, 40, 50, WeightType::kBF16, prec, GemmActivation::kNone, false, true},
                     GetParam(), rng);
        }
    }
}

// The model's shapes (k and n from Qwen3-VL-2B), checked on a window of columns.
TEST_P(GemmTest, RealShapesSampled) {
    std::mt19937 rng(7);
    struct Shape {
        int n, k, m, j0;
        GemmActivation act;
    };
    const Shape shapes[] = {
        {3072, 1024, 20, 1000, GemmActivation::kNone},     // vision qkv
        {4096, 1024, 9, 4000, GemmActivation::kGeluTanh},  // vision fc1
        {1024, 4096, 1, 500, GemmActivation::kNone},       // vision fc2, GEMV
        {2048, 6144, 3, 1984, GemmActivation::kNone},      // text down, GEMV
        {6144, 2048, 15, 3001, GemmActivation::kSilu},     // text gate/up
    };
    for (const Shape& s : shapes) {
        const int n = std::min(64, s.n - s.j0);
        const Weights w(s.n, s.k, rng);
        for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
            for (WeightType wt : {WeightType::kBF16, WeightType::kBF16Panels}) {
                run_case({s.m, n, s.k, wt, prec, s.act, true, true}, GetParam(), rng, s.n, s.j0,
                         &w);
            }
        }
    }
}

TEST_P(GemmTest, ResidualMayAliasOutput) {
    std::mt19937 rng(5);
    for (int m : {1, 5, 40}) {
        const int n = 70, k = 33;
        Mat<float> a(m, k);
        fill(a.buf, rng);
        const Weights w(n, k, rng);
        Mat<float> res(m, n), want(m, n);
        fill(res.buf, rng);
        GemmArgs g{.m = m,
                   .n = n,
                   .k = k,
                   .a = a.data(),
                   .lda = a.ld,
                   .w = w.ptr(WeightType::kBF16),
                   .ldw = w.ld(WeightType::kBF16),
                   .w_type = WeightType::kBF16,
                   .act = GemmActivation::kGeluErf,
                   .residual = res.data(),
                   .ldr = res.ld,
                   .c = want.data(),
                   .ldc = want.ld};
        ref::gemm_f32(g);
        g.c = res.data();
        g.ldc = res.ld;
        kernels_for(GetParam()).gemm(g);
        expect_close(g, w, res, want, 0, "in-place residual m=" + std::to_string(m));
    }
}

TEST_P(GemmTest, ZeroKGivesEpilogueOnly) {
    std::mt19937 rng(3);
    const int m = 20, n = 9;
    std::vector<float> bias(n);
    fill(bias, rng);
    Mat<float> res(m, n), got(m, n);
    fill(res.buf, rng);
    const float dummy = 0.0f;
    GemmArgs g{.m = m,
               .n = n,
               .k = 0,
               .a = &dummy,
               .lda = 0,
               .w = &dummy,
               .ldw = 0,
               .w_type = WeightType::kF32,
               .bias = bias.data(),
               .act = GemmActivation::kSilu,
               .residual = res.data(),
               .ldr = res.ld,
               .c = got.data(),
               .ldc = got.ld};
    kernels_for(GetParam()).gemm(g);
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
            const float want = gemm_activation_ref(GemmActivation::kSilu, bias[j]) + res.at(i, j);
            EXPECT_FLOAT_EQ(got.at(i, j), want);
        }
    }
}

TEST_P(GemmTest, GatedMatchesReference) {
    std::mt19937 rng(11);
    for (WeightType wt : {WeightType::kBF16, WeightType::kF32, WeightType::kBF16Panels}) {
        for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
            for (auto [m, n, k] :
                 {std::tuple{1, 31, 100}, std::tuple{3, 100, 17}, std::tuple{8, 17, 1000},
                  std::tuple{9, 40, 31}, std::tuple{100, 70, 100}, std::tuple{31, 1, 3}}) {
                Mat<float> a(m, k);
                fill(a.buf, rng);
                const Weights wg(n, k, rng), wu(n, k, rng);
                // Both matrices share one stride: use the gate stride for both (same shapes).
                Mat<float> got(m, n), want(m, n);
                const GemmArgs g{.m = m,
                                 .n = n,
                                 .k = k,
                                 .a = a.data(),
                                 .lda = a.ld,
                                 .w = wg.ptr(wt),
                                 .w_up = wu.ptr(wt),
                                 .ldw = wg.ld(wt),
                                 .w_type = wt,
                                 .c = got.data(),
                                 .ldc = got.ld,
                                 .precision = prec};
                GemmArgs r = g;
                r.c = want.data();
                r.ldc = want.ld;
                ref::gemm_f32(r);
                kernels_for(GetParam()).gemm(g);
                for (int i = 0; i < m; ++i) {
                    for (int j = 0; j < n; ++j) {
                        double sg = 0.0, su = 0.0, gate = 0.0, up = 0.0;
                        for (int kk = 0; kk < k; ++kk) {
                            const double x = a.at(i, kk);
                            sg += std::fabs(x * wg.value(wt, j, kk));
                            su += std::fabs(x * wu.value(wt, j, kk));
                            gate += x * wg.value(wt, j, kk);
                            up += x * wu.value(wt, j, kk);
                        }
                        const double silu = gate / (1.0 + std::exp(-gate));
                        const double tol =
                            1.2 * (k + 8) * kEps * (sg * std::fabs(up) + su * std::fabs(silu)) +
                            8 * kEps * std::fabs(want.at(i, j)) + 1e-30;
                        ASSERT_LE(std::fabs(double(got.at(i, j)) - want.at(i, j)), tol)
                            << "gated m=" << m << " n=" << n << " k=" << k << " at " << i << ","
                            << j;
                    }
                }
            }
        }
    }
}

// Every task split gives the same bits as the single-threaded call.
TEST_P(GemmTest, ThreadCountInvariantBitForBit) {
    std::mt19937 rng(21);
    base::ThreadPool pools[] = {base::ThreadPool(1), base::ThreadPool(2), base::ThreadPool(3)};
    for (auto [m, n, k] : {std::tuple{5, 1000, 70}, std::tuple{100, 300, 70},
                           std::tuple{1100, 130, 40}, std::tuple{8, 77, 9}}) {
        for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
            const Operands o(m, n, k, rng);
            Mat<float> base_c(m, n);
            GemmArgs g{.m = m,
                       .n = n,
                       .k = k,
                       .a = o.a.data(),
                       .lda = o.a.ld,
                       .w = o.w.ptr(WeightType::kBF16),
                       .ldw = o.w.ld(WeightType::kBF16),
                       .w_type = WeightType::kBF16,
                       .bias = o.bias.data(),
                       .act = GemmActivation::kGeluTanh,
                       .residual = o.res.data(),
                       .ldr = o.res.ld,
                       .c = base_c.data(),
                       .ldc = base_c.ld,
                       .precision = prec};
            kernels_for(GetParam()).gemm(g);
            GemmArgs gg{.m = m,
                        .n = n,
                        .k = k,
                        .a = o.a.data(),
                        .lda = o.a.ld,
                        .w = o.w.ptr(WeightType::kF32),
                        .w_up = o.w2.ptr(WeightType::kF32),
                        .ldw = o.w.ld(WeightType::kF32),
                        .w_type = WeightType::kF32,
                        .precision = prec};
            Mat<float> base_gated(m, n);
            gg.c = base_gated.data();
            gg.ldc = base_gated.ld;
            kernels_for(GetParam()).gemm(gg);
            for (base::ThreadPool& pool : pools) {
                for (int threads : {1, 2, 7}) {
                    Mat<float> c(m, n), cg(m, n);
                    GemmArgs t = g;
                    t.c = c.data();
                    t.ldc = c.ld;
                    const int nt = gemm_num_tasks(t, threads);
                    ASSERT_GE(nt, 1);
                    pool.parallel_for(
                        nt, [&](int task) { kernels_for(GetParam()).gemm_task(t, task, nt); });
                    GemmArgs tg = gg;
                    tg.c = cg.data();
                    tg.ldc = cg.ld;
                    const int ntg = gemm_num_tasks(tg, threads);
                    pool.parallel_for(
                        ntg, [&](int task) { kernels_for(GetParam()).gemm_task(tg, task, ntg); });
                    for (int i = 0; i < m; ++i) {
                        for (int j = 0; j < n; ++j) {
                            ASSERT_EQ(c.at(i, j), base_c.at(i, j))
                                << "m=" << m << " n=" << n << " threads=" << threads << " at " << i
                                << "," << j;
                            ASSERT_EQ(cg.at(i, j), base_gated.at(i, j))
                                << "gated m=" << m << " n=" << n << " threads=" << threads;
                        }
                    }
                }
            }
        }
    }
}

// A packed once for all tasks (GemmArgs::packed_a, by gemm_pack_a_task or GemmRunner) gives the
// bits of every task packing its own, for plain and gated products, both precisions, weights as
// load-time panels and plain bf16, row counts off the tile; and the tasks really read it.
TEST_P(GemmTest, SharedPackedAGivesTheSameBits) {
    std::mt19937 rng(33);
    base::ThreadPool pool(2);
    GemmRunner runner;
    for (auto [m, n, k] : {std::tuple{212, 700, 1030}, std::tuple{101, 300, 2100},
                           std::tuple{43, 200, 37}, std::tuple{1100, 390, 40}}) {
        for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
            for (WeightType wt : {WeightType::kBF16Panels, WeightType::kBF16}) {
                for (bool gated : {false, true}) {
                    const Operands o(m, n, k, rng);
                    Mat<float> want(m, n);
                    GemmArgs g{.m = m,
                               .n = n,
                               .k = k,
                               .a = o.a.data(),
                               .lda = o.a.ld,
                               .w = o.w.ptr(wt),
                               .w_up = gated ? o.w2.ptr(wt) : nullptr,
                               .ldw = o.w.ld(wt),
                               .w_type = wt,
                               .bias = gated ? nullptr : o.bias.data(),
                               .act = gated ? GemmActivation::kNone : GemmActivation::kGeluTanh,
                               .residual = gated ? nullptr : o.res.data(),
                               .ldr = o.res.ld,
                               .c = want.data(),
                               .ldc = want.ld,
                               .precision = prec};
                    const KernelTable& table = kernels_for(GetParam());
                    const int nt = gemm_num_tasks(g, 4);
                    for (int t = 0; t < nt; ++t) table.gemm_task(g, t, nt);
                    const std::string what = "m=" + std::to_string(m) + " n=" + std::to_string(n) +
                                             " k=" + std::to_string(k) + (gated ? " gated" : "");
                    // By hand: pack tasks in reverse order, then the tasks.
                    const std::size_t bytes = table.gemm_shared_a_bytes(g, nt);
                    if (GetParam() != Isa::kScalar && m == 212) {
                        EXPECT_GT(bytes, 0u) << what;  // 4 column tasks over all rows
                    }
                    if (bytes > 0) {
                        base::AlignedBuffer buf =
                            base::AlignedBuffer::allocate(bytes, "test", false).value();
                        Mat<float> got(m, n);
                        GemmArgs s = g;
                        s.c = got.data();
                        s.ldc = got.ld;
                        s.packed_a = buf.data();
                        const int np = gemm_pack_a_num_tasks(s, 3);
                        for (int t = np - 1; t >= 0; --t) table.gemm_pack_a_task(s, t, np);
                        for (int t = 0; t < nt; ++t) table.gemm_task(s, t, nt);
                        ASSERT_EQ(got.buf, want.buf) << what;
                        // Spoil the shared panels: the tasks read them, so the output changes.
                        std::fill_n(reinterpret_cast<float*>(buf.data()), bytes / sizeof(float),
                                    2.0f);
                        for (int t = 0; t < nt; ++t) table.gemm_task(s, t, nt);
                        EXPECT_NE(got.buf, want.buf) << what;
                    }
                    // Through the runner on a pool (what graph::Executor does).
                    Mat<float> got(m, n);
                    GemmArgs r = g;
                    r.c = got.data();
                    r.ldc = got.ld;
                    runner.run(table, r, pool);
                    ASSERT_EQ(got.buf, want.buf) << what << " (runner)";
                }
            }
        }
    }
    // Small m (the streaming path) and a single column task share nothing.
    const Weights w(64, 16, rng);
    std::vector<float> a(32 * 16);
    const GemmArgs small{.m = 32,
                         .n = 64,
                         .k = 16,
                         .a = a.data(),
                         .lda = 16,
                         .w = w.ptr(WeightType::kBF16),
                         .ldw = w.ld(WeightType::kBF16)};
    EXPECT_EQ(kernels_for(GetParam()).gemm_shared_a_bytes(small, 4), 0u);
    GemmArgs one_col = small;
    one_col.m = 400;
    EXPECT_EQ(kernels_for(GetParam()).gemm_shared_a_bytes(one_col, 1), 0u);
}

// The epilogue's activations over a dense range of inputs (k = 1, weight 1, so the sum is exact):
// relative 1e-6, or 1e-9 absolute where the value is tiny (the SIMD exp-based forms lose a few
// ulps relative in the far negative tail, where the value itself is below 1e-6).
TEST_P(GemmTest, ActivationsAccurate) {
    const int m = 4001;
    std::vector<float> a(m), c(m);
    for (int i = 0; i < m; ++i) a[i] = -14.0f + 28.0f * float(i) / float(m - 1);
    const float one = 1.0f;
    for (GemmActivation act :
         {GemmActivation::kGeluTanh, GemmActivation::kGeluErf, GemmActivation::kSilu}) {
        const GemmArgs g{.m = m,
                         .n = 1,
                         .k = 1,
                         .a = a.data(),
                         .lda = 1,
                         .w = &one,
                         .ldw = 1,
                         .w_type = WeightType::kF32,
                         .act = act,
                         .c = c.data(),
                         .ldc = 1};
        kernels_for(GetParam()).gemm(g);
        for (int i = 0; i < m; ++i) {
            const double want = gemm_activation_ref(act, a[i]);
            ASSERT_NEAR(c[i], want, 1e-6 * std::fabs(want) + 1e-9)
                << "act=" << int(act) << " u=" << a[i];
        }
    }
}

TEST(GemmTasks, SplitsWorkForThreads) {
    const GemmArgs big{.m = 784, .n = 3072, .k = 1024};
    EXPECT_EQ(gemm_num_tasks(big, 1), 1);
    EXPECT_GE(gemm_num_tasks(big, 2), 2);
    const GemmArgs gemv{.m = 1, .n = 151936, .k = 2048};
    EXPECT_GE(gemm_num_tasks(gemv, 2), 2);
    const GemmArgs empty{.m = 0, .n = 10, .k = 3};
    EXPECT_EQ(gemm_num_tasks(empty, 4), 1);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, GemmTest, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                             return std::string(isa_name(info.param));
                         });

}  // namespace
}  // namespace qvl::kernels
