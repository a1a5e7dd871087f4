// Every kernel tier this CPU runs, forced through SessionOptions::isa, in every named precision,
// end to end against the float64 reference on every golden case (public and extra): the
// prefill's logits, 16 teacher-forced decode steps (the reference's tokens fed back, each step's
// logits at the reference's five best tokens compared), and the free-running greedy tokens under
// the margin rule of support/reference_steps.h. Tolerances: logits_tolerance() per precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "kernels/isa.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "support/cpu_skip.h"
#include "support/golden.h"
#include "support/reference_generate.h"
#include "support/reference_steps.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

using TierAndPrecision = std::tuple<kernels::Isa, Precision>;

class GoldenTiers : public ::testing::TestWithParam<TierAndPrecision> {};

// The session's logits after the prompt and after each of the reference's generated tokens but
// the last (teacher forcing), each checked against the reference's step.
double check_teacher_forced(Session& s, const PreparedPrompt& prompt,
                            const std::vector<test::ReferenceStep>& steps,
                            const std::vector<std::int64_t>& generated, double tol) {
    s.reset();
    for (const image::PreprocessedImage& image : prompt.images) {
        const base::Status st = s.encode_image(image);
        EXPECT_TRUE(st.ok()) << st.message();
    }
    base::Status st = s.prefill(prompt.ids);
    EXPECT_TRUE(st.ok()) << st.message();
    double worst = 0;
    for (std::size_t i = 0; i < steps.size() && st.ok(); ++i) {
        worst = std::max(worst, test::expect_step_matches(s.logits(), steps[i], tol,
                                                          "step " + std::to_string(i)));
        if (i + 1 < steps.size()) st = s.decode(std::int32_t(generated[i]));
        EXPECT_TRUE(st.ok()) << st.message();
    }
    EXPECT_GE(steps.size(), 16u);
    return worst;
}

TEST_P(GoldenTiers, EveryCaseFollowsTheReference) {
    const auto [isa, precision] = GetParam();
    QVL_SKIP_UNLESS_CPU(isa);
    const double tol = test::logits_tolerance(precision);
    SessionOptions so;
    so.threads = 2;
    so.ctx_size = 256;
    so.precision = precision;
    so.isa = isa;
    auto session = Session::create(test_util::tiny_model(), so);
    ASSERT_TRUE(session.ok()) << session.status().message();
    Session& s = *session.value();
    ASSERT_EQ(s.isa(), isa) << "the session did not run the tier it was given";
    double worst = 0;
    for (const std::string& name : test::golden_case_names()) {
        SCOPED_TRACE(name);
        const auto golden = test::read_golden(test::test_data_dir() / name / "golden.safetensors");
        const std::vector<test::ReferenceStep> steps = test::reference_steps(golden);
        const std::vector<std::int64_t> generated = golden.at("generated_ids").as_ints();
        const PreparedPrompt prompt = test_util::case_prompt(name);
        worst = std::max(worst, check_teacher_forced(s, prompt, steps, generated, tol));

        s.reset();
        GenerateParams gp;
        gp.n_predict = int(generated.size());
        gp.ignore_eos = true;
        auto free = ::qvl::test::generate(s, prompt, gp, {});
        ASSERT_TRUE(free.ok()) << free.status().message();
        test::expect_tokens_follow(free.value().tokens, generated, steps, tol);
    }
    RecordProperty("worst_logits_err", std::to_string(worst));
    RecordProperty("worst_in_bf16_units", std::to_string(worst * 256));
}

std::string tier_and_precision(const ::testing::TestParamInfo<TierAndPrecision>& info) {
    std::string name = std::string(kernels::isa_name(std::get<0>(info.param))) + "_" +
                       precision_name(std::get<1>(info.param));
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

INSTANTIATE_TEST_SUITE_P(
    TiersAndPrecisions, GoldenTiers,
    ::testing::Combine(::testing::Values(kernels::Isa::kScalar, kernels::Isa::kAvx2,
                                         kernels::Isa::kAvx512, kernels::Isa::kAvx512Bf16),
                       ::testing::ValuesIn(test::precisions_under_test())),
    tier_and_precision);

}  // namespace
}  // namespace qvl::runtime
