// Next-token choice from logits, in Hugging Face's order:
//   0. logit_bias (OpenAI's, as vLLM applies it before the penalties): logit += bias[id];
//   1. penalties, on a copy of the logits (they also apply to greedy decoding):
//      repetition (HF RepetitionPenaltyLogitsProcessor): for every distinct id of the prompt and
//        the generated ids, logit > 0 ? logit / p : logit * p;
//      frequency (OpenAI, as vLLM applies it): logit -= f * count, count = times the id was
//        generated (prompt ids do not count);
//      presence (OpenAI, as vLLM): logit -= p once for every distinct generated id;
//   2. greedy (temperature 0: argmax, lowest id on ties), or sampling: temperature, top-k (ties
//      with the k-th kept), top-p (drop the low tail whose cumulative probability is
//      <= 1 - top_p, keep at least one), softmax, one seeded multinomial draw.
// The penalty state (which ids were seen, how often each was generated) lives in vocab-sized
// arrays allocated by the constructor: begin(), accept() and sample() allocate nothing.
//
// Screened sampling (model/logits_screen.h) gives the same token from bounds on every logit
// and the exact logits of a few ids: screen_candidates() names the ids whose exact values
// can decide the draw (every id whose upper bound reaches the k-th best lower bound, k = 1 for
// greedy, top_k for sampling, after the bias and the penalties, which are monotone in the
// logit), and
// sample_candidates() draws from their exact logits. The survivors of top-k are all among them,
// in the same order, so the draw consumes the same random number and picks the same id.
//
// A grammar (constrain(), grammar/matcher.h) acts as the first logits processor: the ids its
// mask refuses are removed before the penalties, top-k and top-p (as -inf logits would be), in
// both paths, and the screen names candidates among the allowed ids only. accept() advances it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "grammar/matcher.h"

namespace qvl::runtime {

struct SamplingParams {
    float temperature = 0.0f;  // 0: greedy
    int top_k = 0;             // 0: off
    float top_p = 1.0f;        // 1: off
    std::uint64_t seed = 0;
    float repetition_penalty = 1.0f;  // > 0; 1: off
    float presence_penalty = 0.0f;    // 0: off (OpenAI range [-2, 2])
    float frequency_penalty = 0.0f;   // 0: off (OpenAI range [-2, 2])
    // OpenAI's logit_bias: (token id, bias) pairs, added to those logits before everything
    // else; a later pair for the same id replaces an earlier one. Ids outside the vocabulary
    // are ignored here (callers refuse them).
    std::vector<std::pair<std::int32_t, float>> logit_bias;
};

class Sampler {
  public:
    Sampler(int vocab_size, const SamplingParams& params);

    // Starts a sequence: forgets every id seen so far, then records the prompt ids (they feed
    // the repetition penalty only). Ids outside [0, vocab) are ignored.
    void begin(std::span<const std::int32_t> prompt_ids);
    // Records one generated id (all three penalties; the grammar advances). sample() does not
    // record its own choice: the caller accepts what it actually emits.
    void accept(std::int32_t id);

    // Constrains every later choice to the matcher's grammar (nullptr: unconstrained).
    void constrain(std::unique_ptr<grammar::Matcher> matcher) {
        if (matcher) {
            grammar_.emplace(std::move(*matcher));
        } else {
            grammar_.reset();
        }
    }
    // As constrain(), from the moment `trigger` is accepted (it is the grammar's first token).
    void constrain_after(std::int32_t trigger, std::unique_ptr<grammar::Matcher> matcher) {
        trigger_ = trigger;
        pending_.emplace(std::move(*matcher));
    }
    const grammar::Matcher* constraint() const { return grammar_ ? &*grammar_ : nullptr; }

    std::int32_t sample(std::span<const float> logits);

    // Screened sampling: lower[i] <= logit i <= upper[i] for every id. Writes the ids whose
    // exact logits decide the draw to ids (ascending) and returns how many, or -1 when this
    // sampler needs every logit (temperature > 0 without top-k), when ids is too short, or when
    // the bounds are not numbers. Allocates nothing.
    int screen_candidates(std::span<const float> lower, std::span<const float> upper,
                          std::span<std::int32_t> ids);
    // Whether screen_candidates can name the candidates with room for max_candidates ids:
    // greedy, or top-k with top_k <= max_candidates and below the vocabulary; false when the draw
    // needs every logit (temperature > 0 without top-k). A session computes every logit in the
    // step itself for a slot whose sampler cannot be screened (Session::expect_sampler), instead
    // of screening first and computing them all anyway.
    bool screenable(int max_candidates) const;
    // What sample() returns for logits whose values at ids (from screen_candidates) are
    // values[i]; consumes the same random draw.
    std::int32_t sample_candidates(std::span<const std::int32_t> ids,
                                   std::span<const float> values);

    // The distribution sample() draws from for these logits: probs[i] for every id (0 for the
    // ids top-k / top-p removed); with temperature 0, 1 at the greedy choice. For tests and
    // diagnostics; probs.size() must be >= logits.size().
    void probabilities(std::span<const float> logits, std::span<double> probs);

    const SamplingParams& params() const { return params_; }
    bool has_penalties() const;

  private:
    // Whether the logits change before temperature (bias, or penalties with ids seen).
    bool adjusts() const { return !biased_.empty() || (has_penalties() && n_touched_ > 0); }
    // The bias and the penalties applied to one id's logit v (monotone non-decreasing in v).
    float adjust(std::int32_t id, float v) const {
        if (!bias_.empty()) v += bias_[std::size_t(id)];
        return seen_[std::size_t(id)] != 0 && has_penalties() ? penalize(id, v) : v;
    }
    // Writes the biased and penalized logits to values_[0, n) and returns n.
    int penalized(std::span<const float> logits);
    // The penalties' effect on one id's logit v (monotone non-decreasing in v).
    float penalize(std::int32_t id, float v) const;
    // Filters the ids in ids_[0, n) (values in values_) by top-k (when top_k is set and below
    // `vocab`) and top-p; leaves the survivors in ids_[0, kept) sorted by value, largest first,
    // their softmax weights relative to max_ in total_. Returns kept.
    int candidates(int n, int vocab);
    // One draw from candidates(): consumes one random number.
    std::int32_t draw(int kept);
    // With a grammar: the allowed ids into ids_ (ascending), their penalized logits into values_;
    // returns how many. Sets mask_ for allowed().
    int allowed_candidates(std::span<const float> logits);
    bool allowed(std::int32_t id) const {
        return mask_.empty() || ((mask_[std::size_t(id) >> 6] >> (id & 63)) & 1) != 0;
    }
    // What a constrained sampler returns when its grammar allows nothing: the end of the turn.
    std::int32_t no_choice() const;

    SamplingParams params_;
    std::mt19937_64 rng_;
    std::vector<std::int32_t> ids_;
    std::vector<float> values_;
    // Penalty state: seen_[id] is 1 for every id of the prompt or the generated ids, counts_[id]
    // the number of times id was generated; touched_[0, n_touched_) lists the ids set in either.
    std::vector<std::uint8_t> seen_;
    std::vector<std::int32_t> counts_;
    std::vector<std::int32_t> touched_;
    int n_touched_ = 0;
    std::optional<grammar::Matcher> grammar_;  // a copy of the sampler copies the grammar state
    std::optional<grammar::Matcher> pending_;  // constrain_after(): waiting for its trigger
    std::int32_t trigger_ = -1;
    std::span<const std::uint64_t> mask_;  // the grammar's mask for the current step
    // logit_bias as a vocab-sized array (empty without a bias) and the ids it moves.
    std::vector<float> bias_;
    std::vector<std::int32_t> biased_;
    float max_ = 0.0f;
    double total_ = 0.0;
};

// Index of the largest value, lowest index on ties (NaN never wins).
std::int32_t argmax(std::span<const float> logits);

}  // namespace qvl::runtime
