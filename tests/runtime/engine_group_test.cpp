// Engine::submit_group (OpenAI's n): the choices of one prompt prefill it once (the others
// start from a copy of the first one's slot) and each gives bit for bit what the same request
// gives alone on a fresh engine: greedy, seeded sampling, logprobs and logit_bias alike.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "runtime/engine.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

struct Done {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<RequestResult> results;  // by index in the group
    int count = 0;
};

Request choice(Done& done, int index, const PreparedPrompt& prompt, const SamplingParams& s) {
    Request r;
    r.prompt = prompt;
    r.params.n_predict = 6;
    r.params.ignore_eos = true;
    r.params.sampling = s;
    r.params.top_logprobs = 2;
    r.on_done = [&done, index](const RequestResult& res) {
        const std::lock_guard<std::mutex> lock(done.mu);
        done.results[std::size_t(index)] = res;
        ++done.count;
        done.cv.notify_all();
    };
    return r;
}

std::vector<RequestResult> run_group(int slots, const PreparedPrompt& prompt,
                                     const std::vector<SamplingParams>& choices, bool group) {
    EngineOptions eo;
    eo.threads = 2;
    eo.slots = slots;
    eo.ctx_size = 256;
    eo.precision = Precision::kF32;
    auto engine = Engine::create(test_util::tiny_model(), eo);
    EXPECT_TRUE(engine.ok()) << engine.status().message();
    Done done;
    done.results.resize(choices.size());
    std::vector<Request> requests;
    for (std::size_t i = 0; i < choices.size(); ++i) {
        requests.push_back(choice(done, int(i), prompt, choices[i]));
    }
    if (group) {
        EXPECT_TRUE(engine.value()->submit_group(std::move(requests)).ok());
    } else {
        for (Request& r : requests) EXPECT_TRUE(engine.value()->submit(std::move(r)).ok());
    }
    std::unique_lock<std::mutex> lock(done.mu);
    EXPECT_TRUE(done.cv.wait_for(lock, std::chrono::seconds(120),
                                 [&] { return done.count == int(choices.size()); }));
    return done.results;
}

TEST(EngineGroup, ChoicesPrefillOnceAndMatchSeparateRuns) {
    const PreparedPrompt prompt = test_util::case_prompt("golden/img64_describe");
    const std::vector<SamplingParams> choices = {
        {},
        {.temperature = 1.0f, .top_k = 40, .seed = 11},
        {.temperature = 0.9f, .seed = 12},
        {.logit_bias = {{1000, 100.0f}}},
    };
    const std::vector<RequestResult> group = run_group(4, prompt, choices, true);
    const int n = int(prompt.ids.size());
    EXPECT_EQ(group[0].cached_prompt_tokens, 0);
    EXPECT_GT(group[0].timings.prefill, 0.0);
    for (std::size_t i = 1; i < choices.size(); ++i) {
        EXPECT_EQ(group[i].cached_prompt_tokens, n) << i;
        EXPECT_EQ(group[i].timings.prefill, 0.0) << i;
        EXPECT_EQ(group[i].timings.vision, 0.0) << i;
    }
    for (const std::int32_t t : group[3].tokens) EXPECT_EQ(t, 1000);
    // Each choice alone, on its own engine: the same tokens and log-probabilities.
    for (std::size_t i = 0; i < choices.size(); ++i) {
        const RequestResult alone = run_group(1, prompt, {choices[i]}, false)[0];
        EXPECT_EQ(group[i].tokens, alone.tokens) << i;
        ASSERT_EQ(group[i].logprobs.size(), alone.logprobs.size()) << i;
        for (std::size_t k = 0; k < alone.logprobs.size(); ++k) {
            EXPECT_EQ(group[i].logprobs[k].logprob, alone.logprobs[k].logprob) << i << " " << k;
            EXPECT_EQ(group[i].logprobs[k].top, alone.logprobs[k].top) << i << " " << k;
        }
    }
    // Fewer slots than choices: the rest wait and run later, with the same results.
    const std::vector<RequestResult> squeezed = run_group(2, prompt, choices, true);
    for (std::size_t i = 0; i < choices.size(); ++i) {
        EXPECT_EQ(squeezed[i].tokens, group[i].tokens) << i;
    }
}

}  // namespace
}  // namespace qvl::runtime
