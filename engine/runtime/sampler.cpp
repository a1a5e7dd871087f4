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
    : params_(params),
      rng_(params.seed),
      ids_(vocab_size),
      values_(vocab_size),
      seen_(vocab_size, 0),
      counts_(vocab_size, 0),
      touched_(vocab_size) {}

bool Sampler::has_penalties() const {
    return params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
           params_.frequency_penalty != 0.0f;
}

void Sampler::begin(std::span<const std::int32_t> prompt_ids) {
    // Only the ids touched since the last begin() are non-zero: clear those, not the vocab.
    for (int i = 0; i < n_touched_; ++i) {
        seen_[touched_[i]] = 0;
        counts_[touched_[i]] = 0;
    }
    n_touched_ = 0;
    for (const std::int32_t id : prompt_ids) {
        if (id < 0 || std::size_t(id) >= seen_.size() || seen_[id] != 0) continue;
        seen_[id] = 1;
        touched_[n_touched_++] = id;
    }
}

void Sampler::accept(std::int32_t id) {
    if (id < 0 || std::size_t(id) >= seen_.size()) return;
    if (seen_[id] == 0) {
        seen_[id] = 1;
        touched_[n_touched_++] = id;
    }
    ++counts_[id];
}

// mirrors vLLM's apply_penalties (repetition, then frequency, then presence), which for the
// repetition part is HF's RepetitionPenaltyLogitsProcessor; both run before temperature
int Sampler::penalized(std::span<const float> logits) {
    const int n = int(std::min(logits.size(), values_.size()));
    std::copy_n(logits.begin(), n, values_.begin());
    const float rep = params_.repetition_penalty;
    for (int i = 0; i < n_touched_; ++i) {
        const std::int32_t id = touched_[i];
        if (id >= n) continue;
        float v = values_[id];
        if (rep != 1.0f) v = v > 0.0f ? v / rep : v * rep;
        const std::int32_t count = counts_[id];
        if (count > 0) v -= params_.frequency_penalty * float(count) + params_.presence_penalty;
        values_[id] = v;
    }
    return n;
}

int Sampler::candidates(int n) {
    for (int i = 0; i < n; ++i) {
        ids_[i] = i;
        values_[i] /= params_.temperature;
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
    max_ = values_[ids_[0]];
    total_ = 0;
    for (int i = 0; i < kept; ++i) total_ += std::exp(double(values_[ids_[i]]) - max_);
    if (params_.top_p < 1.0f) {
        // Ascending cumulative sum from the smallest: drop while it stays <= 1 - top_p.
        double cum = 0;
        int drop = 0;
        for (int i = kept - 1; i > 0; --i) {
            cum += std::exp(double(values_[ids_[i]]) - max_) / total_;
            if (cum <= 1.0 - params_.top_p) {
                ++drop;
            } else {
                break;
            }
        }
        kept -= drop;
        total_ = 0;
        for (int i = 0; i < kept; ++i) total_ += std::exp(double(values_[ids_[i]]) - max_);
    }
    return kept;
}

// mirrors GenerationMixin's order: processors (penalties) -> temperature -> top-k -> top-p ->
// softmax -> draw
std::int32_t Sampler::sample(std::span<const float> logits) {
    const bool penalties = has_penalties() && n_touched_ > 0;
    if (params_.temperature <= 0.0f) {
        if (!penalties) return argmax(logits);
        const int n = penalized(logits);
        return argmax(std::span<const float>(values_.data(), std::size_t(n)));
    }
    const int n = penalties ? penalized(logits) : int(std::min(logits.size(), values_.size()));
    if (!penalties) std::copy_n(logits.begin(), n, values_.begin());
    const int kept = candidates(n);
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * total_;
    double acc = 0;
    for (int i = 0; i < kept; ++i) {
        acc += std::exp(double(values_[ids_[i]]) - max_);
        if (u < acc) return ids_[i];
    }
    return ids_[kept - 1];
}

void Sampler::probabilities(std::span<const float> logits, std::span<double> probs) {
    std::fill(probs.begin(), probs.end(), 0.0);
    const int n = penalized(logits);
    if (params_.temperature <= 0.0f) {
        probs[argmax(std::span<const float>(values_.data(), std::size_t(n)))] = 1.0;
        return;
    }
    const int kept = candidates(n);
    for (int i = 0; i < kept; ++i) {
        probs[ids_[i]] = std::exp(double(values_[ids_[i]]) - max_) / total_;
    }
}

}  // namespace qvl::runtime
