// Fused patch embedding against an explicit patchify (written here from the spec's formulas)
// followed by a double-precision emulation of the product on the operands as the kernel rounds
// them, on every ISA, with the f32 accumulation's error bound as the tolerance; plus
// thread-count invariance.
#include "kernels/patch_embed.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "base/thread_pool.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "support/bf16_round.h"
#include "support/cpu_skip.h"

namespace qvl::kernels {
namespace {

struct Image {
    int height, width;
    std::vector<std::uint8_t> rgb;
};

Image random_image(int h, int w, std::mt19937& rng) {
    Image im{h, w, std::vector<std::uint8_t>(std::size_t(h) * w * 3)};
    for (auto& b : im.rgb) b = std::uint8_t(rng());
    return im;
}

// pixel_values[r][k] per qwen3vl-spec §3.5 (one still image, both frames equal).
std::vector<float> patchify(const Image& im, const float* lut, int out_k) {
    const int gh = im.height / 16, gw = im.width / 16;
    std::vector<float> px(std::size_t(gh) * gw * out_k);
    for (int bh = 0; bh < gh / 2; ++bh) {
        for (int bw = 0; bw < gw / 2; ++bw) {
            for (int mh = 0; mh < 2; ++mh) {
                for (int mw = 0; mw < 2; ++mw) {
                    const int r = (bh * (gw / 2) + bw) * 4 + mh * 2 + mw;
                    for (int c = 0; c < 3; ++c) {
                        for (int tp = 0; tp < 2; ++tp) {
                            for (int iy = 0; iy < 16; ++iy) {
                                for (int ix = 0; ix < 16; ++ix) {
                                    const int k = ((c * 2 + tp) * 16 + iy) * 16 + ix;
                                    const int y = (bh * 2 + mh) * 16 + iy;
                                    const int x = (bw * 2 + mw) * 16 + ix;
                                    px[std::size_t(r) * out_k + k] =
                                        lut[im.rgb[(std::size_t(y) * im.width + x) * 3 + c]];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    return px;
}

// The product the kernel computes, exactly (in double), on its operands as it rounds them: with
// kBF16 the pixels and f32 weights to bf16 (round to nearest even, the test's own rounding);
// bf16 weights are exact either way. Products of the operands (24 x 24 bits at most) are exact
// in double and the double sum's own error (k 2^-53 of the magnitudes) is nothing next to
// f32's. Also each output's rounding scale: sqrt(sum of s_i^2 + p_i^2 + result^2) over the
// partial sums s_i of the k products p_i (see kLambda).
struct Emulated {
    std::vector<double> value, magnitude;
};

Emulated emulate(const std::vector<float>& px, int n_patches, int k, const void* w, WeightType wt,
                 std::ptrdiff_t ldw, const std::vector<float>& bias, int out_dim,
                 GemmPrecision prec) {
    const bool round = prec == GemmPrecision::kBF16;
    const auto weight = [&](int j, int i) {
        const std::size_t at = std::size_t(j) * std::size_t(ldw) + std::size_t(i);
        if (wt == WeightType::kBF16) {
            const std::uint32_t bits = std::uint32_t(static_cast<const std::uint16_t*>(w)[at])
                                       << 16;
            float f = 0;
            std::memcpy(&f, &bits, 4);
            return double(f);
        }
        const float f = static_cast<const float*>(w)[at];
        return double(round ? test::rne_bf16(f) : f);
    };
    Emulated e{std::vector<double>(std::size_t(n_patches) * out_dim),
               std::vector<double>(std::size_t(n_patches) * out_dim)};
    for (int j = 0; j < out_dim; ++j) {
        std::vector<double> wj(static_cast<std::size_t>(k));
        for (int i = 0; i < k; ++i) wj[std::size_t(i)] = weight(j, i);
        for (int r = 0; r < n_patches; ++r) {
            double sum = 0, squares = 0;
            for (int i = 0; i < k; ++i) {
                const float a = px[std::size_t(r) * k + i];
                const double p = double(round ? test::rne_bf16(a) : a) * wj[std::size_t(i)];
                sum += p;
                squares += sum * sum + p * p;
            }
            sum += bias[std::size_t(j)];
            e.value[std::size_t(r) * out_dim + j] = sum;
            e.magnitude[std::size_t(r) * out_dim + j] = std::sqrt(squares + sum * sum);
        }
    }
    return e;
}

class PatchEmbedTest : public ::testing::TestWithParam<Isa> {
  protected:
    void SetUp() override { QVL_SKIP_UNLESS_CPU(GetParam()); }
};

// The tolerance, from the accumulation's rounding errors. The f32 result is the exact one plus
// sum_i d_i s_i + e_i p_i (+ the bias add's d s): each addition rounds its partial sum s_i by a
// relative d_i, each product p_i (when not exact or fused) by e_i, all |d|, |e| <= u = 2^-24.
// Their worst case, every error of one sign, gives (k + 2) u sum |a w| (Higham, Accuracy and
// Stability, 3.1), far above what happens; as independent, mean-zero errors (the model of
// Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019), Hoeffding's inequality bounds the sum by
// lambda u sqrt(sum s_i^2 + p_i^2 + result^2) except with probability 2 exp(-lambda^2 / 2):
// 2.5e-14 per output for lambda = 8. The partial sums are the emulation's, in k order (the
// kernels' order within a k block; another order of random-sign terms has partial sums of the
// same size). Measured, the worst output of each shape: 0.45 to 1.92 scales (printed; as a
// normal's maximum over 1e3 to 2e4 outputs), against 8. The tolerance before was a constant
// 1.2 (k + 8) u k 0.05 = 8.5e-3, some 1e4 times the error: pixels truncated to bf16 instead of
// rounded (in avx512_util.h's round_bf16) passed it on most outputs and exceeded it by 1.6x at
// most; they exceed the bound here by 1.6e3x (12634 scales).
constexpr double kLambda = 8;

TEST_P(PatchEmbedTest, MatchesPatchifyThenGemm) {
    std::mt19937 rng(42);
    float lut[256];
    for (int v = 0; v < 256; ++v) lut[v] = (v / 255.0f - 0.5f) / 0.5f;
    constexpr int kK = 1536;
    struct Shape {
        int h, w, out_dim;
    };
    for (const Shape s :
         {Shape{32, 32, 100}, Shape{64, 96, 1024}, Shape{448, 448, 17}, Shape{96, 32, 33}}) {
        for (WeightType wt : {WeightType::kBF16, WeightType::kF32}) {
            for (GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
                // The large shapes once (bf16 weights, the model's case per precision).
                if (double(s.h) * s.w * s.out_dim > 2e6 && wt != WeightType::kBF16) continue;
                const Image im = random_image(s.h, s.w, rng);
                const std::ptrdiff_t ldw = kK + 1;
                std::vector<std::uint16_t> wb(std::size_t(s.out_dim) * ldw + 1);
                std::vector<float> wf(std::size_t(s.out_dim) * ldw + 1);
                std::uniform_real_distribution<float> d(-0.05f, 0.05f);
                for (std::size_t i = 0; i < wb.size(); ++i) {
                    wb[i] = base::f32_to_bf16(d(rng)).bits;
                    wf[i] = d(rng);
                }
                std::vector<float> bias(s.out_dim);
                for (float& b : bias) b = d(rng);
                const void* w = wt == WeightType::kBF16 ? static_cast<const void*>(wb.data() + 1)
                                                        : wf.data() + 1;
                const int n_patches = (s.h / 16) * (s.w / 16);
                const std::ptrdiff_t ld_out = s.out_dim + 2;
                std::vector<float> got(std::size_t(n_patches) * ld_out, -7.0f);
                const PatchEmbedArgs args{.rgb = im.rgb.data(),
                                          .height = s.h,
                                          .width = s.w,
                                          .lut = lut,
                                          .w = w,
                                          .w_type = wt,
                                          .ldw = ldw,
                                          .bias = bias.data(),
                                          .out = got.data(),
                                          .ld_out = ld_out,
                                          .out_dim = s.out_dim,
                                          .precision = prec};
                ASSERT_EQ(patch_embed_n_patches(args), n_patches);
                kernels_for(GetParam()).patch_embed(args);

                const std::vector<float> px = patchify(im, lut, kK);
                const Emulated want = emulate(px, n_patches, kK, w, wt, ldw, bias, s.out_dim, prec);
                int bad = 0;
                double worst = 0;
                for (int r = 0; r < n_patches; ++r) {
                    for (int j = 0; j < s.out_dim; ++j) {
                        const std::size_t at = std::size_t(r) * s.out_dim + j;
                        const double diff =
                            std::fabs(got[std::size_t(r) * ld_out + j] - want.value[at]);
                        const double scale = 0x1p-24 * want.magnitude[at];
                        worst = std::max(worst, diff / scale);
                        if (!(diff <= kLambda * scale) && bad++ < 5) {
                            ADD_FAILURE()
                                << s.h << "x" << s.w << " out " << s.out_dim << " at (" << r << ", "
                                << j << ") diff " << diff << " = " << diff / scale
                                << " rounding scales (bound " << kLambda << ")";
                        }
                    }
                    // Padding between rows is untouched.
                    EXPECT_EQ(got[std::size_t(r) * ld_out + s.out_dim], -7.0f);
                }
                std::printf(
                    "%dx%d out %d, %s weights, %s products: worst error %.2f rounding "
                    "scales (bound %.0f)\n",
                    s.h, s.w, s.out_dim, wt == WeightType::kBF16 ? "bf16" : "f32",
                    prec == GemmPrecision::kBF16 ? "bf16" : "f32", worst, kLambda);
            }
        }
    }
}

TEST_P(PatchEmbedTest, ThreadCountInvariant) {
    std::mt19937 rng(8);
    float lut[256];
    for (int v = 0; v < 256; ++v) lut[v] = v / 127.5f - 1.0f;
    const Image im = random_image(128, 160, rng);
    const int out_dim = 200, n_patches = 8 * 10;
    std::vector<std::uint16_t> w(std::size_t(out_dim) * 1536);
    for (auto& v : w) v = base::f32_to_bf16(std::uniform_real_distribution<float>(-1, 1)(rng)).bits;
    std::vector<float> base_out(std::size_t(n_patches) * out_dim);
    PatchEmbedArgs args{.rgb = im.rgb.data(),
                        .height = 128,
                        .width = 160,
                        .lut = lut,
                        .w = w.data(),
                        .ldw = 1536,
                        .out = base_out.data(),
                        .ld_out = out_dim,
                        .out_dim = out_dim};
    kernels_for(GetParam()).patch_embed(args);
    base::ThreadPool pool(2);
    for (int threads : {2, 3, 5}) {
        std::vector<float> out(base_out.size());
        args.out = out.data();
        const int nt = patch_embed_num_tasks(args, threads);
        pool.parallel_for(nt,
                          [&](int t) { kernels_for(GetParam()).patch_embed_task(args, t, nt); });
        ASSERT_EQ(out, base_out) << "threads=" << threads;
    }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, PatchEmbedTest, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                             return std::string(isa_name(info.param));
                         });

}  // namespace
}  // namespace qvl::kernels
