// runtime::Engine::submit refuses what cannot run, before queueing (the public Engine's waiting
// and cancelling are tested in tests/api/engine_test.cpp).
#include <gtest/gtest.h>

#include <memory>

#include "runtime/engine.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

TEST(EngineSubmit, RefusesAnEmptyPromptAndAPenaltyStartPastIt) {
    EngineOptions eo;
    eo.threads = 1;
    eo.ctx_size = 256;
    eo.precision = Precision::kF32;
    auto engine = Engine::create(test_util::tiny_model(), eo);
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    EXPECT_EQ(engine.value()->submit(Request{}).status().code(), base::ErrorCode::kInvalidArgument);
    Request past;
    past.prompt = test_util::case_prompt("golden/text_only");
    past.penalty_from = past.prompt.ids.size() + 1;
    const base::Result<RequestId> refused = engine.value()->submit(std::move(past));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("penalty_from"), std::string::npos);
}

}  // namespace
}  // namespace qvl::runtime
