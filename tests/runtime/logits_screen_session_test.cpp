// A session on a model with the logits screen (model/logits_screen.h) produces what the same
// session without it produces: the same tokens for greedy and top-k sampling with penalties,
// alone and in a decode batch, and the same logits bits when they are asked for, on every tier.
// And the screen is really used: a screened step computes a few hundred rows at most, not the
// vocabulary (the tiny checkpoint's logits are flat, a hard case for it); and skipped for a
// slot whose sampler needs every logit (temperature without top-k), which gets them in the step,
// alone or beside screened slots in one decode batch.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "support/cpu_skip.h"
#include "support/golden.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

const model::Model& unscreened_model() {
    static std::unique_ptr<model::Model> model = [] {
        auto m =
            model::Model::load(test::test_data_dir() / "tiny-qwen3vl", {.logits_screen = false});
        EXPECT_TRUE(m.ok()) << m.status().message();
        return m.ok() ? std::move(m).value() : nullptr;
    }();
    return *model;
}

std::unique_ptr<Session> make_session(const model::Model& m, kernels::Isa isa, int slots) {
    SessionOptions so;
    so.threads = 2;
    so.ctx_size = 256;
    so.isa = isa;
    so.slots = slots;
    auto s = Session::create(m, so);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(s).value() : nullptr;
}

struct Generated {
    std::vector<std::vector<std::int32_t>> tokens;  // per step, every slot's
    std::vector<float> first_logits;
    // Per step, the logits of the slots that want every logit (set_full_logits), in slot order.
    std::vector<float> full_logits;
    int max_candidates = -1;
    std::vector<int> screened_rows;  // per step: last_screened_rows() after its decode
};

// Prefills the case into each slot (the same prompt; slot i samples with params[i]), then
// samples and decodes them together for `steps` steps. expect: tell the session each slot's
// sampler first (Session::expect_sampler), as the runner and the server do.
Generated generate(const model::Model& m, kernels::Isa isa, const PreparedPrompt& p,
                   const std::vector<SamplingParams>& params, int steps, bool expect = true) {
    Generated r;
    const int slots = int(params.size());
    std::unique_ptr<Session> s = make_session(m, isa, slots);
    if (s == nullptr) return r;
    std::vector<Sampler> samplers;
    samplers.reserve(params.size());
    for (const SamplingParams& sp : params) samplers.emplace_back(m.config().text.vocab_size, sp);
    std::vector<int> ids(static_cast<std::size_t>(slots));
    for (int slot = 0; slot < slots; ++slot) {
        if (expect) s->expect_sampler(slot, samplers[std::size_t(slot)]);
        for (const image::PreprocessedImage& image : p.images) {
            EXPECT_TRUE(s->encode_image(image).ok());
        }
        EXPECT_TRUE(s->prefill(slot, p.ids).ok());
        samplers[std::size_t(slot)].begin(p.ids);
        ids[std::size_t(slot)] = slot;
    }
    const std::span<const float> first = s->logits(slots - 1);
    r.first_logits.assign(first.begin(), first.end());
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(slots));
    for (int step = 0; step < steps; ++step) {
        for (int slot = 0; slot < slots; ++slot) {
            Sampler& sampler = samplers[std::size_t(slot)];
            tokens[std::size_t(slot)] = s->sample(slot, sampler);
            sampler.accept(tokens[std::size_t(slot)]);
            r.max_candidates = std::max(r.max_candidates, s->last_screen_candidates());
        }
        r.tokens.push_back(tokens);
        EXPECT_TRUE(s->decode_batch(ids, tokens).ok());
        r.screened_rows.push_back(s->last_screened_rows());
        for (int slot = 0; slot < slots; ++slot) {
            if (!expect || samplers[std::size_t(slot)].screenable(kScreenCandidates)) continue;
            const std::span<const float> l = s->logits(slot);
            r.full_logits.insert(r.full_logits.end(), l.begin(), l.end());
        }
    }
    return r;
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
            << "logit " << i;
    }
}

class ScreenedSession : public ::testing::TestWithParam<kernels::Isa> {
  protected:
    void SetUp() override { QVL_SKIP_UNLESS_CPU(GetParam()); }
};

TEST_P(ScreenedSession, SameTokensAndLogitsAsWithoutTheScreen) {
    const model::Model& screened = test_util::tiny_model();
    ASSERT_NE(screened.logits_screen(), nullptr);
    ASSERT_EQ(unscreened_model().logits_screen(), nullptr);
    const std::vector<SamplingParams> cases = {
        {},
        {.repetition_penalty = 1.3f},
        {.temperature = 0.7f, .top_k = 20, .top_p = 0.8f, .seed = 11},
        {.temperature = 1.0f, .top_k = 50, .seed = 12, .presence_penalty = 1.0f},
        {.temperature = 0.7f, .seed = 13},  // no top-k: every logit, through the fallback
    };
    for (const std::string name : {"text_only", "img64_describe"}) {
        const PreparedPrompt p = test_util::case_prompt("golden/" + name);
        for (std::size_t c = 0; c < cases.size(); ++c) {
            const bool full = c + 1 == cases.size();
            for (int slots : {1, 3}) {
                // Without the hint too: the unscreenable sampler then falls back to every logit
                // after the screen (the same bits, only slower).
                for (bool expect : {true, false}) {
                    if (!full && !expect) continue;
                    SCOPED_TRACE(name + " case " + std::to_string(c) + " slots " +
                                 std::to_string(slots) + (expect ? "" : " without the hint"));
                    const std::vector<SamplingParams> params(std::size_t(slots), cases[c]);
                    const Generated want = generate(unscreened_model(), GetParam(), p, params, 12);
                    const Generated got = generate(screened, GetParam(), p, params, 12, expect);
                    EXPECT_EQ(got.tokens, want.tokens);
                    expect_same_bits(got.first_logits, want.first_logits);
                    EXPECT_EQ(want.max_candidates, -1);
                    if (!full) {
                        EXPECT_GT(got.max_candidates, 0);
                        EXPECT_LT(got.max_candidates, 1000);
                    } else {
                        EXPECT_EQ(got.max_candidates, -1);
                    }
                    // The screen's int8 product ran over the screenable slots' rows only: none
                    // when the sampler needs every logit and the session was told so.
                    for (int rows : got.screened_rows) {
                        EXPECT_EQ(rows, full && expect ? 0 : slots);
                    }
                    if (full && expect) expect_same_bits(got.full_logits, want.full_logits);
                }
            }
        }
    }
}

// One decode batch of a greedy, an unscreenable (temperature without top-k) and a top-k slot:
// the int8 product covers the two screenable rows, the middle slot gets every logit in the step,
// and every slot's tokens (and that slot's logits) are the unscreened session's.
TEST_P(ScreenedSession, MixedBatchScreensOnlyTheScreenableSlots) {
    const model::Model& screened = test_util::tiny_model();
    const std::vector<SamplingParams> params = {
        {.repetition_penalty = 1.2f},
        {.temperature = 0.8f, .seed = 21},
        {.temperature = 0.7f, .top_k = 30, .seed = 22},
    };
    const PreparedPrompt p = test_util::case_prompt("golden/img64_describe");
    const Generated want = generate(unscreened_model(), GetParam(), p, params, 10);
    const Generated got = generate(screened, GetParam(), p, params, 10);
    EXPECT_EQ(got.tokens, want.tokens);
    ASSERT_EQ(got.full_logits.size(), want.full_logits.size());
    EXPECT_EQ(got.full_logits.size(), std::size_t(10) * screened.config().text.vocab_size);
    expect_same_bits(got.full_logits, want.full_logits);
    EXPECT_GT(got.max_candidates, 0);
    ASSERT_EQ(got.screened_rows.size(), 10u);
    for (int rows : got.screened_rows) EXPECT_EQ(rows, 2);
    EXPECT_EQ(want.screened_rows, std::vector<int>(10, 0));
}

INSTANTIATE_TEST_SUITE_P(AllIsas, ScreenedSession, ::testing::ValuesIn(kernels::all_isas()),
                         [](const ::testing::TestParamInfo<kernels::Isa>& info) {
                             return std::string(kernels::isa_name(info.param));
                         });

}  // namespace
}  // namespace qvl::runtime
