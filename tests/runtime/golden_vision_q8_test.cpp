// `--vision-weights q8` against bf16 and the float64 goldens: on every golden image the vision
// features keep a cosine >= kFeatureGate with the bf16 tower's (per-row activation scales, what
// ships, and per-block scales for the comparison), and the last-position logits of every case
// with images keep their gate against the reference, alone and with q4 text weights.
// Prints the rows of issue 49's error tables. The tiny checkpoint's weights are random (no
// outlier channels), so these bound the kernels' and the format's error, not a trained tower's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "golden_run.h"
#include "kernels/isa.h"
#include "model/model.h"
#include "support/golden.h"

namespace qvl::runtime {
namespace {

// Measured worst cases on the tiny checkpoint (notes of issue 49): feature cosine 0.99984 per row
// and 0.99985 per block of 64; logits cosine 0.99936 with bf16 text weights (bf16 alone: 0.99995)
// and 0.911 with q4 text weights (q4 alone: 0.915, golden_q4_test). Each gate sits under its
// worst case by less than the next coarser error would cost: int8 per-row weights and
// activations reconstruct to ~0.5 % (cosine ~0.99998 per product) and the tower stacks a few
// dozen products, so a broken scale or row would fall far below 0.999.
constexpr double kFeatureGate = 0.999;
constexpr double kLogitsGate = 0.999;
constexpr double kLogitsGateWithQ4 = 0.90;  // golden_q4_test's kQ4Gate

struct Variant {
    const char* name;
    model::WeightFormat text;
    bool vision_q8;
    int vision_block;  // 0: per-row scales
};

const std::vector<Variant>& variants() {
    static const std::vector<Variant> v = {
        {"bf16", model::WeightFormat::kBF16, false, 0},
        {"vision q8 (per row)", model::WeightFormat::kBF16, true, 0},
        {"vision q8 (per block of 64)", model::WeightFormat::kBF16, true, 64},
        {"q4 + vision q8", model::WeightFormat::kQ4, true, 0}};
    return v;
}

const model::Model& model_for(const Variant& v) {
    static std::map<std::string, std::unique_ptr<model::Model>> cache;
    auto& slot = cache[v.name];
    if (slot == nullptr) {
        model::LoadOptions lo;
        lo.weights = v.text;
        lo.vision_q8 = v.vision_q8;
        lo.vision.block = v.vision_block;
        auto m = model::Model::load(test::test_data_dir() / "tiny-qwen3vl", lo);
        EXPECT_TRUE(m.ok()) << m.status().message();
        if (m.ok()) slot = std::move(m).value();
    }
    return *slot;
}

struct CaseOutput {
    std::vector<std::vector<float>> features;  // per image
    std::vector<float> logits;
};

CaseOutput run(const model::Model& m, const std::string& name,
               const SessionOptions& options = test_util::golden_session_options()) {
    CaseOutput r;
    for (const auto& image : test_util::golden_prompt(m, name).images) {
        auto session = Session::create(m, options);
        EXPECT_TRUE(session.ok()) << session.status().message();
        if (!session.ok()) return r;
        EXPECT_TRUE(session.value()->encode_image(image).ok());
        r.features.push_back(session.value()->image_feature_levels(0));
    }
    r.logits = test_util::run_golden_case(m, name, 1, options).logits;
    return r;
}

std::vector<std::string> image_cases() {
    std::vector<std::string> out;
    for (const std::string& name : test::golden_case_names()) {
        if (name.find("text_only") == std::string::npos) out.push_back(name);
    }
    return out;
}

class GoldenVisionQ8Test : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenVisionQ8Test, FeaturesCloseToBf16AndLogitsToReference) {
    const auto golden =
        test::read_golden(test::test_data_dir() / GetParam() / "golden.safetensors");
    const std::vector<double>& ref = golden.at("logits_last").values;
    CaseOutput bf16;
    for (const Variant& v : variants()) {
        SCOPED_TRACE(v.name);
        const model::Model& m = model_for(v);
        ASSERT_EQ(m.vision_q8(), v.vision_q8);
        const CaseOutput out = run(m, GetParam());
        ASSERT_EQ(out.logits.size(), ref.size());
        if (!v.vision_q8) bf16 = out;
        ASSERT_EQ(out.features.size(), bf16.features.size());
        for (std::size_t i = 0; i < out.features.size(); ++i) {
            ASSERT_EQ(out.features[i].size(), bf16.features[i].size());
            const double c = test_util::cosine(out.features[i], bf16.features[i]);
            std::printf("| %s | image %zu | %s | feature cos %.6f |\n", GetParam().c_str(), i,
                        v.name, c);
            if (v.vision_q8) {
                EXPECT_GE(c, kFeatureGate) << "image " << i;
                EXPECT_NE(out.features[i], bf16.features[i]);  // the int8 tower is in use
            }
        }
        const double c = test_util::cosine(out.logits, ref);
        std::printf("| %s | %s | logits rel L2 %.3g | cos %.6f |\n", GetParam().c_str(), v.name,
                    test_util::relative_l2(out.logits, ref), c);
        if (v.vision_q8) {
            EXPECT_GE(c, v.text == model::WeightFormat::kQ4 ? kLogitsGateWithQ4 : kLogitsGate);
        }
    }
}

// The AVX2 tier under the same gates (per-row int8 tower with bf16 text, and with q4 text),
// its features against the bf16 tower's on the same tier.
TEST_P(GoldenVisionQ8Test, Avx2TierKeepsTheGates) {
    if (!kernels::isa_supported(kernels::Isa::kAvx2)) GTEST_SKIP() << "this CPU lacks AVX2";
    const auto golden =
        test::read_golden(test::test_data_dir() / GetParam() / "golden.safetensors");
    const std::vector<double>& ref = golden.at("logits_last").values;
    SessionOptions so = test_util::golden_session_options();
    so.isa = kernels::Isa::kAvx2;
    const CaseOutput bf16 = run(model_for(variants()[0]), GetParam(), so);
    for (const Variant& v : variants()) {
        if (!v.vision_q8 || v.vision_block != 0) continue;
        SCOPED_TRACE(v.name);
        const CaseOutput out = run(model_for(v), GetParam(), so);
        ASSERT_EQ(out.features.size(), bf16.features.size());
        for (std::size_t i = 0; i < out.features.size(); ++i) {
            EXPECT_GE(test_util::cosine(out.features[i], bf16.features[i]), kFeatureGate);
        }
        EXPECT_GE(test_util::cosine(out.logits, ref),
                  v.text == model::WeightFormat::kQ4 ? kLogitsGateWithQ4 : kLogitsGate);
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenVisionQ8Test, ::testing::ValuesIn(image_cases()),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n) c = (c == '/') ? '_' : c;
                             return n;
                         });

TEST(ModelLoad, VisionQ8RewritesTheLinearsOnly) {
    const model::Model& m = model_for(variants()[1]);
    const model::VisionWeights& v = m.weights().vision();
    EXPECT_NE(v.patch_embed.type, kernels::WeightType::kQ8);
    for (const model::VisionBlockWeights& b : v.blocks) {
        for (const model::Matrix* w : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) {
            ASSERT_EQ(w->type, kernels::WeightType::kQ8);
            const auto& q = *static_cast<const kernels::Q8Matrix*>(w->data);
            EXPECT_EQ(q.block, kernels::q8_row_block(w->cols));
            EXPECT_EQ(q.k_blocks, 1);
        }
    }
    EXPECT_EQ(v.merger.fc1.type, kernels::WeightType::kQ8);
    EXPECT_EQ(m.weight_format(), model::WeightFormat::kBF16);  // the text decoder as stored
}

}  // namespace
}  // namespace qvl::runtime
