// Batch invariance: a sequence's logits are bit-identical whether its decode steps run alone
// or in one batched pass beside 1..3 other sequences, for every golden case, named precision and
// kernel tier this CPU has (greedy answers never change with load), with the stored weights and
// with 4-bit text and int8 vision weights; and the sequence, fed the reference's tokens, follows
// the float64 reference at every step within its precision's bound (support/reference_steps.h),
// so the batch cannot agree with itself on a wrong answer (stored weights; the quantized formats
// have their own gates: golden_q4_test, golden_vision_q8_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/scratch.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "support/alloc_counter.h"
#include "support/cpu_skip.h"
#include "support/golden.h"
#include "support/reference_steps.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

constexpr int kSteps = 15;  // decode steps: with the prefill, the reference's 16 steps

using StepLogits = std::vector<std::vector<float>>;  // [step][vocab]

std::unique_ptr<Session> make_session(Precision precision, kernels::Isa isa, int slots,
                                      bool quantized = false) {
    SessionOptions so;
    so.threads = 2;
    so.ctx_size = 256;
    so.precision = precision;
    so.isa = isa;
    so.slots = slots;
    auto s = Session::create(
        quantized ? test_util::tiny_model_quantized() : test_util::tiny_model(), so);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(s).value() : nullptr;
}

base::Status prefill_case(Session& s, int slot, const PreparedPrompt& p) {
    for (const image::PreprocessedImage& image : p.images) QVL_TRY(s.encode_image(image));
    return s.prefill(slot, p.ids);
}

// Prefills prompts[i] into slots[i], then decodes all of them together for kSteps steps, the
// last slot on the reference's tokens `forced` (teacher forcing), the others greedily; returns
// the logits of the last slot after its prefill and after each step.
StepLogits run_batch(Session& s, const std::vector<int>& slots,
                     const std::vector<const PreparedPrompt*>& prompts,
                     const std::vector<std::int64_t>& forced) {
    const int watch = slots.back();
    StepLogits out;
    for (std::size_t i = 0; i < slots.size(); ++i) {
        const base::Status st = prefill_case(s, slots[i], *prompts[i]);
        EXPECT_TRUE(st.ok()) << st.message();
        if (!st.ok()) return out;
    }
    const auto first = s.logits(watch);
    out.emplace_back(first.begin(), first.end());
    std::vector<std::int32_t> tokens(slots.size());
    for (int step = 0; step < kSteps; ++step) {
        for (std::size_t i = 0; i < slots.size(); ++i) tokens[i] = argmax(s.logits(slots[i]));
        tokens.back() = std::int32_t(forced.at(std::size_t(step)));
        const base::Status st = s.decode_batch(slots, tokens);
        EXPECT_TRUE(st.ok()) << st.message();
        if (!st.ok()) return out;
        const auto l = s.logits(watch);
        out.emplace_back(l.begin(), l.end());
    }
    return out;
}

bool bit_identical(const StepLogits& a, const StepLogits& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].size() != b[i].size() ||
            std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
            return false;
    }
    return true;
}

struct Tier {
    Precision precision;
    kernels::Isa isa;
    bool quantized = false;  // 4-bit text and int8 vision weights (issue 49)
};

class BatchInvariance : public ::testing::TestWithParam<Tier> {};

TEST_P(BatchInvariance, LogitsDoNotDependOnTheBatch) {
    const Tier tier = GetParam();
    QVL_SKIP_UNLESS_CPU(tier.isa);
    const std::vector<std::string> names = test::golden_case_names();
    std::vector<PreparedPrompt> prompts;
    for (const std::string& n : names) prompts.push_back(test_util::case_prompt(n));
    auto session = make_session(tier.precision, tier.isa, 4, tier.quantized);
    ASSERT_NE(session, nullptr);
    Session& s = *session;
    const double tol = test::logits_tolerance(tier.precision);
    for (std::size_t c = 0; c < names.size(); ++c) {
        SCOPED_TRACE(names[c]);
        const auto golden =
            test::read_golden(test::test_data_dir() / names[c] / "golden.safetensors");
        const std::vector<test::ReferenceStep> ref = test::reference_steps(golden);
        const std::vector<std::int64_t> forced = golden.at("generated_ids").as_ints();
        s.reset();
        const StepLogits alone = run_batch(s, {0}, {&prompts[c]}, forced);
        ASSERT_EQ(alone.size(), std::size_t(kSteps + 1));
        ASSERT_GE(ref.size(), alone.size());
        for (std::size_t step = 0; step < alone.size() && !tier.quantized; ++step) {
            test::expect_step_matches(alone[step], ref[step], tol, "step " + std::to_string(step));
        }
        for (int others = 1; others <= 3; ++others) {
            SCOPED_TRACE("beside " + std::to_string(others));
            s.reset();
            // The case sits in slot `others` and at batch row `others`.
            std::vector<int> slots;
            std::vector<const PreparedPrompt*> batch;
            for (int o = 0; o < others; ++o) {
                slots.push_back((others + 1 + o) % 4);
                batch.push_back(&prompts[(c + 1 + std::size_t(o)) % prompts.size()]);
            }
            slots.push_back(others);
            batch.push_back(&prompts[c]);
            const StepLogits together = run_batch(s, slots, batch, forced);
            EXPECT_TRUE(bit_identical(alone, together));
        }
    }
}

std::vector<Tier> every_tier_and_precision() {
    std::vector<Tier> out;
    for (kernels::Isa isa : kernels::all_isas()) {
        for (Precision p : test::precisions_under_test()) out.push_back({p, isa});
    }
    out.push_back({Precision::kBF16, kernels::Isa::kAvx2, true});
    out.push_back({Precision::kBF16, kernels::Isa::kAvx512Bf16, true});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Tiers, BatchInvariance, ::testing::ValuesIn(every_tier_and_precision()),
                         [](const auto& info) {
                             std::string p = precision_name(info.param.precision);
                             std::erase(p, '-');
                             return std::string(kernels::isa_name(info.param.isa)) + "_" + p +
                                    (info.param.quantized ? "_q4_vision_q8" : "");
                         });

TEST(BatchDecode, StepOfFourSlotsDoesNotAllocate) {
    // Greedy, through the logits screen (model/logits_screen.h) as generation samples; then with
    // two slots sampling without top-k, which get every logit in the step (the screen's int8
    // product over the other two rows).
    for (bool mixed : {false, true}) {
        SCOPED_TRACE(mixed ? "two slots with full logits" : "all screened");
        auto session = make_session(Precision::kF32, kernels::best_isa(), 4);
        ASSERT_NE(session, nullptr);
        Session& s = *session;
        const std::vector<std::int32_t> prompt = {151644, 872, 198, 9707, 151645, 198};
        const std::vector<int> slots = {2, 0, 3, 1};
        const int vocab = s.model().config().text.vocab_size;
        std::vector<Sampler> samplers(4, Sampler(vocab, {}));
        if (mixed) {
            samplers[1] = Sampler(vocab, {.temperature = 0.8f, .seed = 5});
            samplers[3] = Sampler(vocab, {.temperature = 0.8f, .seed = 6});
        }
        for (int i = 0; i < 4; ++i)
            s.expect_sampler(slots[std::size_t(i)], samplers[std::size_t(i)]);
        for (int slot : slots) ASSERT_TRUE(s.prefill(slot, prompt).ok());
        std::vector<std::int32_t> tokens = {1879, 11, 0, 872};
        auto step = [&] {
            for (int i = 0; i < 4; ++i) {
                tokens[std::size_t(i)] = s.sample(slots[std::size_t(i)], samplers[std::size_t(i)]);
            }
            return s.decode_batch(slots, tokens).ok() &&
                   s.decode_batch({slots.data() + 1, 2}, {tokens.data() + 1, 2}).ok();
        };
        // Warm-up: sizes the planner scratch, and each thread's kernel scratch for the products
        // (tasks go to whichever thread is free, so a few steps).
        ASSERT_TRUE(s.decode_batch(slots, tokens).ok());
        for (int i = 0; i < 3; ++i) ASSERT_TRUE(step());
        const test::AllocationCounter counter;
        const std::uint64_t scratch = kernels::scratch_allocations();
        for (int i = 0; i < 8; ++i) ASSERT_TRUE(step());
        EXPECT_EQ(counter.allocations(), 0);
        EXPECT_EQ(kernels::scratch_allocations(), scratch)
            << "kernel scratch grew in a decode step";
        // The last step decodes slots 0 (full logits) and 3 (greedy).
        if (mixed && s.model().logits_screen() != nullptr) {
            EXPECT_EQ(s.last_screened_rows(), 1);
        }
    }
}

TEST(BatchDecode, RefusesBadBatches) {
    auto session = make_session(Precision::kF32, kernels::best_isa(), 2);
    ASSERT_NE(session, nullptr);
    const std::vector<std::int32_t> t2 = {1, 2};
    const std::vector<int> repeated = {1, 1}, outside = {0, 2};
    EXPECT_EQ(session->decode_batch(repeated, t2).code(), base::ErrorCode::kInvalidArgument);
    EXPECT_EQ(session->decode_batch(outside, t2).code(), base::ErrorCode::kInvalidArgument);
    EXPECT_EQ(session->prefill(2, t2).code(), base::ErrorCode::kInvalidArgument);
    SessionOptions so;
    so.slots = 0;
    EXPECT_EQ(Session::create(test_util::tiny_model(), so).status().code(),
              base::ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace qvl::runtime
