// token_logprobs against log-softmax written here in long double: the chosen token's value, the
// top list's order (ties: lower id first), its length clamped to 0..20, and a row whose
// probabilities underflow in float still giving finite log-probabilities.
#include "runtime/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace qvl::runtime {
namespace {

std::vector<long double> log_softmax(const std::vector<float>& logits) {
    long double mx = -INFINITY, sum = 0;
    for (const float v : logits) mx = std::max(mx, (long double)v);
    for (const float v : logits) sum += std::exp((long double)v - mx);
    std::vector<long double> out;
    for (const float v : logits) out.push_back((long double)v - mx - std::log(sum));
    return out;
}

TEST(Logprobs, MatchLogSoftmaxAndOrderTheTop) {
    std::mt19937 rng(4);
    std::normal_distribution<float> d(0.0f, 4.0f);
    std::vector<float> logits(5000);
    for (float& v : logits) v = d(rng);
    logits[10] = logits[20] = 30.0f;  // a tie at the top: 10 before 20
    logits[4999] = -200.0f;           // exp underflows in float, not in double
    const std::vector<long double> want = log_softmax(logits);
    for (const int top : {0, 1, 5, 20, 50}) {
        const TokenLogprobs t = token_logprobs(logits, 4999, top);
        EXPECT_EQ(t.token, 4999);
        EXPECT_NEAR(t.logprob, double(want[4999]), 1e-9);
        EXPECT_TRUE(std::isfinite(t.logprob));
        ASSERT_EQ(int(t.top.size()), std::min(top, 20));
        for (std::size_t k = 0; k < t.top.size(); ++k) {
            EXPECT_NEAR(t.top[k].second, double(want[std::size_t(t.top[k].first)]), 1e-9);
            if (k > 0) {
                EXPECT_GE(t.top[k - 1].second, t.top[k].second);
            }
        }
        if (top >= 2) {
            EXPECT_EQ(t.top[0].first, 10);
            EXPECT_EQ(t.top[1].first, 20);
        }
    }
    // Every id beyond the top list is no more likely than its last entry.
    const TokenLogprobs t = token_logprobs(logits, 0, 20);
    int above = 0;
    for (const long double v : want) above += double(v) > t.top.back().second ? 1 : 0;
    EXPECT_EQ(above, 19);
}

}  // namespace
}  // namespace qvl::runtime
