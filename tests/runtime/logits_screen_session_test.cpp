// A session on a model with the logits screen (model/logits_screen.h) produces what the same
// session without it produces: the same tokens for greedy and top-k sampling with penalties,
// alone and in a decode batch, and the same logits bits when they are asked for, on every tier.
// And the screen is really used: a screened step computes a few hundred rows at most, not the
// vocabulary (the tiny checkpoint's logits are flat, a hard case for it).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
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
    std::vector<std::int32_t> tokens;
    std::vector<float> first_logits;
    int max_candidates = -1;
};

// Prefills the case into each of `slots` slots (the same prompt), then samples and decodes
// them together for `steps` steps; returns the last slot's tokens.
Generated generate(const model::Model& m, kernels::Isa isa, const PreparedPrompt& p,
                   const SamplingParams& params, int slots, int steps) {
    Generated r;
    std::unique_ptr<Session> s = make_session(m, isa, slots);
    if (s == nullptr) return r;
    std::vector<Sampler> samplers(std::size_t(slots), Sampler(m.config().text.vocab_size, params));
    std::vector<int> ids(static_cast<std::size_t>(slots));
    for (int slot = 0; slot < slots; ++slot) {
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
        r.tokens.push_back(tokens.back());
        EXPECT_TRUE(s->decode_batch(ids, tokens).ok());
    }
    return r;
}

class ScreenedSession : public ::testing::TestWithParam<kernels::Isa> {
  protected:
    void SetUp() override {
        if (!kernels::isa_supported(GetParam())) {
            GTEST_SKIP() << kernels::isa_name(GetParam()) << " unsupported";
        }
    }
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
            for (int slots : {1, 3}) {
                SCOPED_TRACE(name + " case " + std::to_string(c) + " slots " +
                             std::to_string(slots));
                const Generated want =
                    generate(unscreened_model(), GetParam(), p, cases[c], slots, 12);
                const Generated got = generate(screened, GetParam(), p, cases[c], slots, 12);
                EXPECT_EQ(got.tokens, want.tokens);
                ASSERT_EQ(got.first_logits.size(), want.first_logits.size());
                EXPECT_EQ(std::memcmp(got.first_logits.data(), want.first_logits.data(),
                                      got.first_logits.size() * sizeof(float)),
                          0);
                EXPECT_EQ(want.max_candidates, -1);
                if (c + 1 < cases.size()) {
                    EXPECT_GT(got.max_candidates, 0);
                    EXPECT_LT(got.max_candidates, 1000);
                } else {
                    EXPECT_EQ(got.max_candidates, -1);
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, ScreenedSession, ::testing::ValuesIn(kernels::all_isas()),
                         [](const ::testing::TestParamInfo<kernels::Isa>& info) {
                             return std::string(kernels::isa_name(info.param));
                         });

}  // namespace
}  // namespace qvl::runtime
