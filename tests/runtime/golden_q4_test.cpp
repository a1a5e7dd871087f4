// `--weights q4` against the float64 goldens (public and extra cases): the last-position logits
// of what q4 ships keep a cosine >= kQ4Gate with the reference, and the first greedy token equals
// bf16's unless the reference separates the two picks by less than the run's largest logit error.
// Prints the error table of issue 49 for bf16, q8 and the 4-bit variants (relative L2, cosine,
// greedy tokens equal to bf16's over 64 tokens), so that the choice of which matrices keep int8
// rests on numbers. The tiny checkpoint's weights are random: its logits are nearly flat, so
// greedy agreement over many tokens says little, and random weights have none of the outliers
// of a trained checkpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "golden_run.h"
#include "kernels/isa.h"
#include "model/model.h"
#include "model/quantize.h"
#include "support/golden.h"

namespace qvl::runtime {
namespace {

// What q4 ships measured cosine 0.915-0.959 (relative L2 0.29-0.41) on the five cases, where
// int8 measures 0.9991-0.9996 (0.03-0.04): 4-bit groups reconstruct a Gaussian weight with
// about 15x int8's error (0.086 against 0.006, bench/quant/q4_format_error.py), and the tiny
// checkpoint's random layers pass it on undamped. The gate sits below the worst case (0.915,
// multi_image) with room for the other tiers' epilogue roundings and no more: a wrong unpacking
// or scale (a shifted nibble, a mis-converted half) drops the cosine far below it.
constexpr double kQ4Gate = 0.90;

struct Variant {
    const char* name;
    model::WeightFormat format;
    model::QuantizeOptions options;
};

std::vector<Variant> variants() {
    model::QuantizeOptions all4 = model::q4_defaults();
    all4.lm_head_int8 = false;
    model::QuantizeOptions km = model::q4_defaults();  // as Q4_K_M keeps more bits
    km.v_int8 = km.down_int8 = true;
    model::QuantizeOptions v8 = model::q4_defaults(), down8 = model::q4_defaults();
    v8.v_int8 = true;
    down8.down_int8 = true;
    return {{"bf16", model::WeightFormat::kBF16, {}},
            {"q8", model::WeightFormat::kQ8, {}},
            {"q4", model::WeightFormat::kQ4, model::q4_defaults()},
            {"q4 v+down int8", model::WeightFormat::kQ4, km},
            {"q4 lm_head 4-bit", model::WeightFormat::kQ4, all4},
            {"q4 v int8", model::WeightFormat::kQ4, v8},
            {"q4 down int8", model::WeightFormat::kQ4, down8}};
}

const model::Model& model_for(const Variant& v) {
    static std::map<std::string, std::unique_ptr<model::Model>> cache;
    auto& slot = cache[v.name];
    if (slot == nullptr) {
        model::LoadOptions lo;
        lo.weights = v.format;
        lo.q4 = v.options;
        auto m = model::Model::load(test::test_data_dir() / "tiny-qwen3vl", lo);
        EXPECT_TRUE(m.ok()) << m.status().message();
        if (m.ok()) slot = std::move(m).value();
    }
    return *slot;
}

double max_abs_error(const std::vector<float>& a, const std::vector<double>& ref) {
    double m = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) m = std::max(m, std::fabs(a[i] - ref[i]));
    return m;
}

class GoldenQ4Test : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenQ4Test, CloseToReferenceAndFirstTokenAsBf16) {
    const auto golden =
        test::read_golden(test::test_data_dir() / GetParam() / "golden.safetensors");
    const std::vector<double>& ref = golden.at("logits_last").values;
    test_util::GoldenRun bf16;
    for (const Variant& v : variants()) {
        SCOPED_TRACE(v.name);
        const model::Model& m = model_for(v);
        ASSERT_EQ(m.weight_format(), v.format);
        const test_util::GoldenRun out = test_util::run_golden_case(m, GetParam(), 64);
        ASSERT_EQ(out.logits.size(), ref.size());
        ASSERT_FALSE(out.tokens.empty());
        if (v.format == model::WeightFormat::kBF16) bf16 = out;
        const double cos = test_util::cosine(out.logits, ref);
        std::printf("| %s | %s | %.3g | %.6f | %zu/%zu |\n", GetParam().c_str(), v.name,
                    test_util::relative_l2(out.logits, ref), cos,
                    test_util::same_prefix(out.tokens, bf16.tokens), out.tokens.size());
        if (std::string(v.name) != "q4") continue;
        EXPECT_GE(cos, kQ4Gate);
        EXPECT_NE(out.logits, bf16.logits);  // the 4-bit weights are really in use
        const double margin =
            std::fabs(ref[std::size_t(bf16.tokens[0])] - ref[std::size_t(out.tokens[0])]);
        if (margin > max_abs_error(out.logits, ref)) {
            EXPECT_EQ(out.tokens[0], bf16.tokens[0]) << "reference margin " << margin;
        }
    }
}

// The AVX2 tier (issue 49 reports it per tier; on an AVX-512 machine too) under the same gate:
// its 4-bit sums are the other tiers' integers, its f32 epilogue its own.
TEST_P(GoldenQ4Test, Avx2TierKeepsTheGate) {
    if (!kernels::isa_supported(kernels::Isa::kAvx2)) GTEST_SKIP() << "this CPU lacks AVX2";
    const auto golden =
        test::read_golden(test::test_data_dir() / GetParam() / "golden.safetensors");
    const std::vector<double>& ref = golden.at("logits_last").values;
    SessionOptions so = test_util::golden_session_options();
    so.isa = kernels::Isa::kAvx2;
    for (const Variant& v : variants()) {
        if (std::string(v.name) != "q4") continue;
        const test_util::GoldenRun out =
            test_util::run_golden_case(model_for(v), GetParam(), 1, so);
        ASSERT_EQ(out.logits.size(), ref.size());
        EXPECT_GE(test_util::cosine(out.logits, ref), kQ4Gate);
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenQ4Test, ::testing::ValuesIn(test::golden_case_names()),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n) c = (c == '/') ? '_' : c;
                             return n;
                         });

// q, k and v in 4 bits are one stacked matrix, as in int8; a v kept in int8 is not stackable
// with them, and the layer then runs three products (the same values).
TEST(ModelLoad, FourBitQkvStacksOnlyInOneFormat) {
    const std::vector<Variant> vs = variants();
    const model::Model& q4 = model_for(vs[2]);
    const model::Model& km = model_for(vs[3]);
    for (const model::TextLayerWeights& l : q4.weights().text().layers) {
        ASSERT_NE(l.qkv.data, nullptr);
        const auto& stacked = *static_cast<const kernels::Q8Matrix*>(l.qkv.data);
        EXPECT_EQ(stacked.bits, 4);
        const auto& v = *static_cast<const kernels::Q8Matrix*>(l.v.data);
        const int offset = l.q.rows + l.k.rows;
        for (int row = 0; row < v.rows; row += 5)
            for (int col = 0; col < v.cols; col += 3)
                ASSERT_EQ(kernels::q8_weight(stacked, offset + row, col),
                          kernels::q8_weight(v, row, col));
    }
    const auto& lm = *static_cast<const kernels::Q8Matrix*>(q4.weights().text().lm_head.data);
    EXPECT_EQ(lm.bits, 8);
    for (const model::TextLayerWeights& l : km.weights().text().layers) {
        EXPECT_EQ(l.qkv.data, nullptr);
        EXPECT_EQ(static_cast<const kernels::Q8Matrix*>(l.v.data)->bits, 8);
        EXPECT_EQ(static_cast<const kernels::Q8Matrix*>(l.down.data)->bits, 8);
        EXPECT_EQ(static_cast<const kernels::Q8Matrix*>(l.q.data)->bits, 4);
    }
}

}  // namespace
}  // namespace qvl::runtime
