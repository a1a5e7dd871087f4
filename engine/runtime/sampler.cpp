#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

namespace qvl::runtime {

std::int32_t argmax(std::span<const float> logits) {
    std::int32_t best = 0;
    float best_v = -INFINITY;
    for (std::size_t i = 0; i < logits.size(); ++i) {
        if (logits[i] > best_v) {
            best_v = logits[i];
            best = std::int32_t(i);
        }
    }
    return best;
}

Sampler::Sampler(int vocab_size, const SamplingParams& params)
    : params_(params), rng_(params.seed), ids_(vocab_size), values_(vocab_size) {}

// mirrors GenerationMixin's warper order: temperature -> top-k -> top-p -> softmax -> draw
std::int32_t Sampler::sample(std::span<const float> logits) {
    if (params_.temperature <= 0.0f) return argmax(logits);
    const int n = int(std::min(logits.size(), ids_.size()));
    for (int i = 0; i < n; ++i) {
        ids_[i] = i;
        values_[i] = logits[i] / params_.temperature;
    }
    int kept = n;
    if (params_.top_k > 0 && params_.top_k < n) {
        // Threshold = the k-th largest value; everything >= it survives (ties kept).
        std::vector<float>& v = values_;
        std::vector<std::int32_t>& ids = ids_;
        std::nth_element(ids.begin(), ids.begin() + (params_.top_k - 1), ids.begin() + n,
                         [&](std::int32_t a, std::int32_t b) { return v[a] > v[b]; });
        const float threshold = v[ids[params_.top_k - 1]];
        kept = int(std::partition(ids.begin(), ids.begin() + n,
                                  [&](std::int32_t a) { return v[a] >= threshold; }) -
                   ids.begin());
    }
    // Candidates sorted by value, largest first (ties: lower id first, for determinism).
    std::sort(ids_.begin(), ids_.begin() + kept, [&](std::int32_t a, std::int32_t b) {
        return values_[a] != values_[b] ? values_[a] > values_[b] : a < b;
    });
    const float max_v = values_[ids_[0]];
    double total = 0;
    for (int i = 0; i < kept; ++i) total += std::exp(double(values_[ids_[i]]) - max_v);
    if (params_.top_p < 1.0f) {
        // Ascending cumulative sum from the smallest: drop while it stays <= 1 - top_p.
        double cum = 0;
        int drop = 0;
        for (int i = kept - 1; i > 0; --i) {
            cum += std::exp(double(values_[ids_[i]]) - max_v) / total;
            if (cum <= 1.0 - params_.top_p) {
                ++drop;
            } else {
                break;
            }
        }
        kept -= drop;
        total = 0;
        for (int i = 0; i < kept; ++i) total += std::exp(double(values_[ids_[i]]) - max_v);
    }
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * total;
    double acc = 0;
    for (int i = 0; i < kept; ++i) {
        acc += std::exp(double(values_[ids_[i]]) - max_v);
        if (u < acc) return ids_[i];
    }
    return ids_[kept - 1];
}

}  // namespace qvl::runtime
