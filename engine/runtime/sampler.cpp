#include "runtime/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>

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
      touched_(vocab_size) {
    for (const auto& [id, bias] : params.logit_bias) {
        if (id < 0 || id >= vocab_size) continue;
        if (bias_.empty()) bias_.assign(std::size_t(vocab_size), 0.0f);
        if (std::find(biased_.begin(), biased_.end(), id) == biased_.end()) biased_.push_back(id);
        bias_[std::size_t(id)] = bias;
    }
}

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
    if (pending_ && id == trigger_) {
        grammar_.emplace(std::move(*pending_));
        pending_.reset();
    }
    if (grammar_) grammar_->accept(id);
}

int Sampler::allowed_candidates(std::span<const float> logits) {
    mask_ = grammar_->mask();
    const bool adjusted = adjusts();
    const int n = int(std::min(logits.size(), values_.size()));
    int count = 0;
    for (int w = 0; w * 64 < n; ++w) {
        for (std::uint64_t bits = mask_[std::size_t(w)]; bits != 0; bits &= bits - 1) {
            const int id = w * 64 + std::countr_zero(bits);
            if (id >= n) break;
            ids_[count++] = id;
            values_[id] = adjusted ? adjust(id, logits[id]) : logits[id];
        }
    }
    return count;
}

std::int32_t Sampler::no_choice() const {
    const auto ends = grammar_->end_ids();
    return ends.empty() ? 0 : ends[0];
}

// mirrors vLLM's apply_penalties (repetition, then frequency, then presence), which for the
// repetition part is HF's RepetitionPenaltyLogitsProcessor; both run before temperature
float Sampler::penalize(std::int32_t id, float v) const {
    const float rep = params_.repetition_penalty;
    if (rep != 1.0f) v = v > 0.0f ? v / rep : v * rep;
    const std::int32_t count = counts_[id];
    if (count > 0) v -= params_.frequency_penalty * float(count) + params_.presence_penalty;
    return v;
}

int Sampler::penalized(std::span<const float> logits) {
    const int n = int(std::min(logits.size(), values_.size()));
    std::copy_n(logits.begin(), n, values_.begin());
    for (const std::int32_t id : biased_) {
        if (id < n) values_[id] += bias_[std::size_t(id)];
    }
    if (!has_penalties()) return n;
    for (int i = 0; i < n_touched_; ++i) {
        const std::int32_t id = touched_[i];
        if (id < n) values_[id] = penalize(id, values_[id]);
    }
    return n;
}

int Sampler::candidates(int n, int vocab) {
    for (int i = 0; i < n; ++i) values_[ids_[i]] /= params_.temperature;
    int kept = n;
    if (params_.top_k > 0 && params_.top_k < vocab && params_.top_k < n) {
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

std::int32_t Sampler::draw(int kept) {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * total_;
    double acc = 0;
    for (int i = 0; i < kept; ++i) {
        acc += std::exp(double(values_[ids_[i]]) - max_);
        if (u < acc) return ids_[i];
    }
    return ids_[kept - 1];
}

// mirrors GenerationMixin's order: processors (penalties) -> temperature -> top-k -> top-p ->
// softmax -> draw
std::int32_t Sampler::sample(std::span<const float> logits) {
    if (grammar_) {
        const int n = allowed_candidates(logits);
        if (n == 0) return no_choice();
        if (params_.temperature > 0.0f) return draw(candidates(n, int(logits.size())));
        std::int32_t best = ids_[0];  // as argmax(): lowest id on ties, NaN never wins
        float best_v = -INFINITY;
        for (int i = 0; i < n; ++i) {
            if (values_[ids_[i]] > best_v) best_v = values_[ids_[i]], best = ids_[i];
        }
        return best;
    }
    const bool adjusted = adjusts();
    if (params_.temperature <= 0.0f) {
        if (!adjusted) return argmax(logits);
        const int n = penalized(logits);
        return argmax(std::span<const float>(values_.data(), std::size_t(n)));
    }
    const int n = penalized(logits);
    std::iota(ids_.begin(), ids_.begin() + n, 0);
    return draw(candidates(n, n));
}

bool Sampler::screenable(int max_candidates) const {
    const int vocab = int(values_.size());
    if (params_.temperature <= 0.0f) return max_candidates >= 1 && vocab > 0;
    return params_.top_k > 0 && params_.top_k < vocab && params_.top_k <= max_candidates;
}

int Sampler::screen_candidates(std::span<const float> lower, std::span<const float> upper,
                               std::span<std::int32_t> ids) {
    const int n = int(std::min({lower.size(), upper.size(), values_.size()}));
    const bool greedy = params_.temperature <= 0.0f;
    if (!screenable(int(std::min<std::size_t>(ids.size(), INT32_MAX))) || n == 0) return -1;
    if (!greedy && params_.top_k >= n) return -1;
    const int k = greedy ? 1 : params_.top_k;
    const bool adjusted = adjusts();
    if (grammar_) mask_ = grammar_->mask();
    auto bound = [&](std::span<const float> b, int id) {
        return adjusted ? adjust(id, b[id]) : b[id];
    };
    // t = the k-th largest lower bound: a min-heap of the k best in values_[0, k).
    float* heap = values_.data();
    int filled = 0;
    for (int id = 0; id < n; ++id) {
        if (!allowed(id)) continue;
        const float lo = bound(lower, id);
        if (!(lo == lo)) return -1;  // NaN
        if (filled < k) {
            heap[filled++] = lo;
            std::push_heap(heap, heap + filled, std::greater<>());
        } else if (lo > heap[0]) {
            std::pop_heap(heap, heap + k, std::greater<>());
            heap[k - 1] = lo;
            std::push_heap(heap, heap + k, std::greater<>());
        }
    }
    if (filled == 0) return -1;
    // Fewer allowed ids than k: every allowed id is a candidate.
    const float t = filled < k ? -INFINITY : heap[0];
    int count = 0;
    for (int id = 0; id < n; ++id) {
        if (!allowed(id)) continue;
        const float hi = bound(upper, id);
        if (!(hi == hi)) return -1;
        if (hi >= t) {
            if (count == int(ids.size())) return -1;
            ids[count++] = id;
        }
    }
    return count;
}

std::int32_t Sampler::sample_candidates(std::span<const std::int32_t> ids,
                                        std::span<const float> values) {
    const bool adjusted = adjusts();
    const int n = int(std::min(ids.size(), values.size()));
    for (int i = 0; i < n; ++i) {
        const std::int32_t id = ids[i];
        values_[id] = adjusted ? adjust(id, values[i]) : values[i];
    }
    if (params_.temperature <= 0.0f) {
        // argmax over ascending ids: the lowest id on ties, NaN never wins, as argmax()
        std::int32_t best = n > 0 ? ids[0] : 0;
        float best_v = -INFINITY;
        for (int i = 0; i < n; ++i) {
            if (values_[ids[i]] > best_v) best_v = values_[ids[i]], best = ids[i];
        }
        return best;
    }
    std::copy_n(ids.begin(), n, ids_.begin());
    return draw(candidates(n, int(values_.size())));
}

void Sampler::probabilities(std::span<const float> logits, std::span<double> probs) {
    std::fill(probs.begin(), probs.end(), 0.0);
    if (grammar_) {
        const int n = allowed_candidates(logits);
        if (n == 0) return;
        if (params_.temperature <= 0.0f) {
            probs[sample(logits)] = 1.0;
            return;
        }
        const int kept = candidates(n, int(logits.size()));
        for (int i = 0; i < kept; ++i)
            probs[ids_[i]] = std::exp(double(values_[ids_[i]]) - max_) / total_;
        return;
    }
    const int n = penalized(logits);
    if (params_.temperature <= 0.0f) {
        probs[argmax(std::span<const float>(values_.data(), std::size_t(n)))] = 1.0;
        return;
    }
    std::iota(ids_.begin(), ids_.begin() + n, 0);
    const int kept = candidates(n, n);
    for (int i = 0; i < kept; ++i) {
        probs[ids_[i]] = std::exp(double(values_[ids_[i]]) - max_) / total_;
    }
}

}  // namespace qvl::runtime
