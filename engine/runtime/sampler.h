// Next-token choice from logits: greedy (temperature 0: argmax, lowest id on ties) or
// sampling in Hugging Face's order — temperature, top-k (ties with the k-th kept), top-p
// (drop the low tail whose cumulative probability is <= 1 - top_p, keep at least one),
// softmax, one seeded multinomial draw. Buffers are sized once; sampling allocates nothing.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace qvl::runtime {

struct SamplingParams {
    float temperature = 0.0f;  // 0: greedy
    int top_k = 0;             // 0: off
    float top_p = 1.0f;        // 1: off
    std::uint64_t seed = 0;
};

class Sampler {
  public:
    Sampler(int vocab_size, const SamplingParams& params);
    std::int32_t sample(std::span<const float> logits);
    const SamplingParams& params() const { return params_; }

  private:
    SamplingParams params_;
    std::mt19937_64 rng_;
    std::vector<std::int32_t> ids_;
    std::vector<float> values_;
};

// Index of the largest value, lowest index on ties (NaN never wins).
std::int32_t argmax(std::span<const float> logits);

}  // namespace qvl::runtime
