// One request through the Engine from a waiting thread (runtime::run_request, what qvl-run and
// the public API use) on the tiny checkpoint: the answer comes back, refusals and failures come
// back as errors, the stop flag cancels, and a request's own cancel flag ends it before its next
// token with the answer so far.
#include "runtime/run_request.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "tiny_case.h"

namespace qvl::runtime {
namespace {

std::unique_ptr<Engine> one_slot_engine(int ctx) {
    EngineOptions eo;
    eo.threads = 1;
    eo.slots = 1;
    eo.ctx_size = ctx;
    eo.precision = Precision::kF32;
    auto e = Engine::create(test_util::tiny_model(), eo);
    EXPECT_TRUE(e.ok()) << e.status().message();
    return e.ok() ? std::move(e).value() : nullptr;
}

Request text_request(int n_predict) {
    Request r;
    r.prompt = test_util::case_prompt("golden/text_only");
    r.params.n_predict = n_predict;
    r.params.ignore_eos = true;
    return r;
}

TEST(RunRequest, ReturnsTheAnswerOrTheError) {
    auto engine = one_slot_engine(256);
    ASSERT_NE(engine, nullptr);
    std::vector<std::int32_t> streamed;
    Request r = text_request(5);
    r.on_text = [&](std::string_view, std::int32_t token) { streamed.push_back(token); };
    base::Result<RequestResult> done = run_request(*engine, std::move(r), nullptr);
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(done->finish_reason, "length");
    EXPECT_EQ(done->tokens.size(), 5u);
    EXPECT_FALSE(streamed.empty());

    // Refused at submit.
    EXPECT_EQ(run_request(*engine, Request{}, nullptr).status().code(),
              base::ErrorCode::kInvalidArgument);
    Request past = text_request(1);
    past.penalty_from = past.prompt.ids.size() + 1;
    const base::Result<RequestResult> refused = run_request(*engine, std::move(past), nullptr);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("penalty_from"), std::string::npos);
    // Failed while running: an image pad with no image cannot be prefilled.
    Request no_image = text_request(1);
    no_image.prompt.ids.insert(no_image.prompt.ids.begin() + 1,
                               test_util::tiny_model().config().image_token_id);
    EXPECT_FALSE(run_request(*engine, std::move(no_image), nullptr).ok());
    // The engine serves on after both.
    EXPECT_TRUE(run_request(*engine, text_request(2), nullptr).ok());
}

TEST(RunRequest, StopFlagCancels) {
    auto engine = one_slot_engine(4096);
    ASSERT_NE(engine, nullptr);
    std::atomic<bool> stop{false};
    Request r = text_request(4000);
    r.on_text = [&](std::string_view, std::int32_t) { stop.store(true); };
    base::Result<RequestResult> done = run_request(*engine, std::move(r), &stop);
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(done->finish_reason, "cancelled");
    EXPECT_LT(done->tokens.size(), 4000u);
    EXPECT_EQ(engine->stats().slots_busy, 0);
}

TEST(RunRequest, RequestCancelFlagEndsBeforeTheNextToken) {
    auto engine = one_slot_engine(256);
    ASSERT_NE(engine, nullptr);
    std::atomic<bool> cancel{false};
    std::int32_t last_streamed = -1;
    Request r = text_request(50);
    r.params.cancel = &cancel;
    r.on_text = [&](std::string_view, std::int32_t token) {
        last_streamed = token;
        cancel.store(true);
    };
    base::Result<RequestResult> done = run_request(*engine, std::move(r), nullptr);
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(done->finish_reason, "cancelled");
    ASSERT_FALSE(done->tokens.empty());
    EXPECT_EQ(done->tokens.back(), last_streamed);  // nothing sampled after the flag was seen

    // Set before the request: the prompt is prefilled, no token is sampled.
    Request early = text_request(50);
    early.params.cancel = &cancel;
    done = run_request(*engine, std::move(early), nullptr);
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(done->finish_reason, "cancelled");
    EXPECT_TRUE(done->tokens.empty());
    EXPECT_GT(done->timings.prefill, 0.0);
}

}  // namespace
}  // namespace qvl::runtime
