// Log-probabilities of generated tokens, as OpenAI's `logprobs` / `top_logprobs` report them:
// the log-softmax of the model's logits before any sampling setting (no bias, penalty,
// temperature, top-k or top-p), computed in double from the full row of logits.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace qvl::runtime {

// Most alternatives one token reports (OpenAI's top_logprobs range is 0..20).
inline constexpr int kMaxTopLogprobs = 20;

struct TokenLogprobs {
    std::int32_t token = -1;
    double logprob = 0.0;
    // The `top` most likely ids and their log-probabilities, most likely first (ties: lower id
    // first).
    std::vector<std::pair<std::int32_t, double>> top;
};

// log p(token) and the `top` best ids (0..kMaxTopLogprobs; more are clamped) for one row of
// logits. A NaN logit makes every value NaN (the row has no distribution).
TokenLogprobs token_logprobs(std::span<const float> logits, std::int32_t token, int top);

}  // namespace qvl::runtime
