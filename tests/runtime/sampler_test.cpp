// The sampler against a reference written here from the published formulas (Hugging Face's
// RepetitionPenalty / Temperature / TopK / TopP processors, OpenAI's presence and frequency
// penalties as vLLM applies them): the distribution it draws from, compared exactly, and
// 20000 seeded draws, compared by frequency.
#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "support/alloc_counter.h"

namespace qvl::runtime {
namespace {

struct History {
    std::vector<std::int32_t> prompt;
    std::vector<std::int32_t> generated;
};

// The reference, in double, one processor after another over the whole vocab.
std::vector<double> reference_distribution(const std::vector<float>& logits, const History& h,
                                           const SamplingParams& p) {
    std::vector<double> x(logits.begin(), logits.end());
    std::set<std::int32_t> input_ids(h.prompt.begin(), h.prompt.end());
    input_ids.insert(h.generated.begin(), h.generated.end());
    for (const std::int32_t id : input_ids) {
        x[id] = x[id] < 0 ? x[id] * p.repetition_penalty : x[id] / p.repetition_penalty;
    }
    std::map<std::int32_t, int> counts;
    for (const std::int32_t id : h.generated) ++counts[id];
    for (const auto& [id, count] : counts) {
        x[id] -= double(p.frequency_penalty) * count;
        x[id] -= p.presence_penalty;
    }
    const int n = int(x.size());
    std::vector<double> probs(n, 0.0);
    if (p.temperature <= 0.0f) {
        probs[std::max_element(x.begin(), x.end()) - x.begin()] = 1.0;
        return probs;
    }
    for (double& v : x) v /= p.temperature;
    std::vector<bool> keep(n, true);
    if (p.top_k > 0 && p.top_k < n) {
        std::vector<double> sorted = x;
        std::sort(sorted.begin(), sorted.end(), std::greater<>());
        const double kth = sorted[p.top_k - 1];
        for (int i = 0; i < n; ++i) keep[i] = x[i] >= kth;
    }
    auto softmax_kept = [&] {
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < n; ++i) {
            if (keep[i]) mx = std::max(mx, x[i]);
        }
        for (int i = 0; i < n; ++i) sum += keep[i] ? std::exp(x[i] - mx) : 0.0;
        for (int i = 0; i < n; ++i) probs[i] = keep[i] ? std::exp(x[i] - mx) / sum : 0.0;
    };
    softmax_kept();
    if (p.top_p < 1.0f) {
        // HF TopPLogitsWarper: ascending sort, cumulative sum, remove while <= 1 - top_p,
        // always keep the largest.
        std::vector<int> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return probs[a] < probs[b]; });
        double cum = 0;
        for (int i = 0; i + 1 < n; ++i) {
            cum += probs[order[i]];
            if (cum <= 1.0 - p.top_p) keep[order[i]] = false;
        }
        softmax_kept();
    }
    return probs;
}

std::vector<float> random_logits(int n, std::uint32_t seed, float scale = 3.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

Sampler make_sampler(int vocab, const SamplingParams& p, const History& h) {
    Sampler s(vocab, p);
    s.begin(h.prompt);
    for (const std::int32_t id : h.generated) s.accept(id);
    return s;
}

void expect_distribution(const std::vector<float>& logits, const History& h,
                         const SamplingParams& p) {
    const std::vector<double> want = reference_distribution(logits, h, p);
    Sampler s = make_sampler(int(logits.size()), p, h);
    std::vector<double> got(logits.size());
    s.probabilities(logits, got);
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 1e-6) << "id " << i;
    }
}

// Draws n tokens with fresh state each time and compares frequencies with `want`, within five
// standard deviations of a binomial count (a false alarm is below 1e-6 per id).
void expect_frequencies(const std::vector<float>& logits, const History& h, const SamplingParams& p,
                        const std::vector<double>& want, int n = 20000) {
    Sampler s = make_sampler(int(logits.size()), p, h);
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < n; ++i) ++counts[s.sample(logits)];
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double f = double(counts[i]) / n;
        const double sd = std::sqrt(want[i] * (1 - want[i]) / n);
        EXPECT_NEAR(f, want[i], 5 * sd + 1e-9) << "id " << i << " drawn " << counts[i];
    }
}

const History kHistory = {.prompt = {3, 7, 7, 7, 11, 2, 30},
                          .generated = {5, 5, 5, 7, 19, 2, 5, 0}};

TEST(Sampler, TemperatureMatchesSoftmaxOfScaledLogits) {
    const std::vector<float> logits = random_logits(40, 1);
    for (const float t : {0.3f, 1.0f, 2.5f}) {
        SCOPED_TRACE(t);
        const SamplingParams p{.temperature = t, .seed = 9};
        expect_distribution(logits, {}, p);
        expect_frequencies(logits, {}, p, reference_distribution(logits, {}, p));
    }
}

TEST(Sampler, TopKKeepsTheKLargestAndTheirTies) {
    std::vector<float> logits = random_logits(30, 2);
    logits[4] = logits[9] = logits[17] = 10.0f;  // three-way tie across the k = 2 boundary
    const SamplingParams p{.temperature = 1.0f, .top_k = 2, .seed = 1};
    expect_distribution(logits, {}, p);
    Sampler s(30, p);
    std::vector<double> probs(30);
    s.probabilities(logits, probs);
    EXPECT_EQ(std::count_if(probs.begin(), probs.end(), [](double v) { return v > 0; }), 3);
    const SamplingParams p5{.temperature = 0.7f, .top_k = 5, .seed = 4};
    expect_frequencies(logits, {}, p5, reference_distribution(logits, {}, p5));
}

TEST(Sampler, TopPDropsTheLowTailAndKeepsAtLeastOne) {
    const std::vector<float> logits = random_logits(50, 3, 4.0f);
    for (const float top_p : {0.05f, 0.5f, 0.8f, 0.95f}) {
        SCOPED_TRACE(top_p);
        const SamplingParams p{.temperature = 0.9f, .top_p = top_p, .seed = 5};
        expect_distribution(logits, {}, p);
        expect_frequencies(logits, {}, p, reference_distribution(logits, {}, p), 10000);
    }
    // A tiny top_p keeps exactly the most likely id.
    Sampler s(50, {.temperature = 1.0f, .top_p = 1e-6f});
    std::vector<double> probs(50);
    s.probabilities(logits, probs);
    EXPECT_EQ(probs[std::max_element(logits.begin(), logits.end()) - logits.begin()], 1.0);
    // Top-k and top-p together, in HF's order (k first).
    const SamplingParams both{.temperature = 0.8f, .top_k = 12, .top_p = 0.7f, .seed = 2};
    expect_distribution(logits, {}, both);
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
    std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, NAN, 1.9f};
    Sampler s(6, {});
    EXPECT_EQ(s.sample(logits), 1);
    logits[1] = NAN;
    EXPECT_EQ(s.sample(logits), 3);
    EXPECT_EQ(argmax(std::vector<float>{-INFINITY, -1e30f, -1e30f}), 1);
}

TEST(Sampler, SeededDrawsAreReproducible) {
    const std::vector<float> logits = random_logits(100, 4, 1.0f);
    const SamplingParams p{.temperature = 1.0f, .top_k = 50, .top_p = 0.9f, .seed = 1234};
    auto draws = [&](std::uint64_t seed) {
        SamplingParams q = p;
        q.seed = seed;
        Sampler s(100, q);
        std::vector<std::int32_t> out(64);
        for (std::int32_t& id : out) id = s.sample(logits);
        return out;
    };
    EXPECT_EQ(draws(1234), draws(1234));
    EXPECT_NE(draws(1234), draws(1235));
}

TEST(Sampler, PenaltiesMatchTheReference) {
    const std::vector<float> logits = random_logits(40, 6);
    const SamplingParams cases[] = {
        {.temperature = 1.0f, .repetition_penalty = 1.3f},
        {.temperature = 1.0f, .repetition_penalty = 0.7f},  // < 1 favours repeats
        {.temperature = 1.0f, .presence_penalty = 1.5f},
        {.temperature = 1.0f, .presence_penalty = -0.5f},
        {.temperature = 1.0f, .frequency_penalty = 0.4f},
        {.temperature = 0.8f,
         .top_k = 15,
         .top_p = 0.9f,
         .repetition_penalty = 1.2f,
         .presence_penalty = 0.7f,
         .frequency_penalty = 0.3f},
    };
    for (const SamplingParams& p : cases) {
        SCOPED_TRACE(testing::Message() << "rep " << p.repetition_penalty << " presence "
                                        << p.presence_penalty << " freq " << p.frequency_penalty);
        expect_distribution(logits, kHistory, p);
    }
    SamplingParams p = cases[5];
    p.seed = 77;
    expect_frequencies(logits, kHistory, p, reference_distribution(logits, kHistory, p));
}

TEST(Sampler, RepetitionPenaltyCountsEachIdOnceAndKeepsSigns) {
    // id 0 positive, id 1 negative, id 2 zero, id 3 unseen; each seen id appears three times.
    const std::vector<float> logits = {2.0f, -2.0f, 0.0f, 1.0f};
    Sampler s(4, {.temperature = 1.0f, .repetition_penalty = 2.0f});
    s.begin(std::vector<std::int32_t>{0, 0, 1, 2});
    s.accept(0);
    s.accept(1);
    s.accept(1);
    std::vector<double> probs(4);
    s.probabilities(logits, probs);
    // penalized logits: 1, -4, 0, 1
    const double z = 2 * std::exp(1.0) + std::exp(-4.0) + 1.0;
    EXPECT_NEAR(probs[0], std::exp(1.0) / z, 1e-7);
    EXPECT_NEAR(probs[1], std::exp(-4.0) / z, 1e-7);
    EXPECT_NEAR(probs[2], 1.0 / z, 1e-7);
    EXPECT_NEAR(probs[3], std::exp(1.0) / z, 1e-7);
}

TEST(Sampler, PresenceAndFrequencyCountOnlyGeneratedIds) {
    const std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
    Sampler s(4, {.temperature = 1.0f, .presence_penalty = 0.5f, .frequency_penalty = 0.25f});
    s.begin(std::vector<std::int32_t>{0, 0, 0});  // prompt ids: no presence or frequency
    s.accept(1);
    s.accept(2);
    s.accept(2);
    std::vector<double> probs(4);
    s.probabilities(logits, probs);
    // penalized logits: 1, 1 - 0.5 - 0.25, 1 - 0.5 - 0.5, 1
    const double z = 2 * std::exp(1.0) + std::exp(0.25) + std::exp(0.0);
    EXPECT_NEAR(probs[0], std::exp(1.0) / z, 1e-7);
    EXPECT_NEAR(probs[1], std::exp(0.25) / z, 1e-7);
    EXPECT_NEAR(probs[2], 1.0 / z, 1e-7);
}

TEST(Sampler, PenaltiesApplyToGreedyToo) {
    const std::vector<float> logits = {3.0f, 2.5f, 0.0f};
    Sampler s(3, {.repetition_penalty = 1.5f});
    EXPECT_EQ(s.sample(logits), 0);
    s.begin(std::vector<std::int32_t>{0});
    EXPECT_EQ(s.sample(logits), 1);  // 3 / 1.5 = 2 < 2.5
    Sampler q(3, {.presence_penalty = 0.6f});
    q.begin({});
    q.accept(0);
    EXPECT_EQ(q.sample(logits), 1);
    expect_distribution(logits, {.prompt = {0}}, {.repetition_penalty = 1.5f});
}

TEST(Sampler, BeginForgetsThePreviousSequence) {
    const std::vector<float> logits = random_logits(20, 7);
    const SamplingParams p{.temperature = 1.0f,
                           .repetition_penalty = 1.4f,
                           .presence_penalty = 1.0f,
                           .frequency_penalty = 0.5f};
    Sampler s = make_sampler(20, p, kHistory);
    const History next = {.prompt = {1, 2}, .generated = {4}};
    s.begin(next.prompt);
    s.accept(4);
    std::vector<double> got(20);
    s.probabilities(logits, got);
    const std::vector<double> want = reference_distribution(logits, next, p);
    for (int i = 0; i < 20; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(Sampler, OutOfRangeIdsAreIgnored) {
    Sampler s(4, {.repetition_penalty = 2.0f, .presence_penalty = 1.0f});
    s.begin(std::vector<std::int32_t>{-1, 4, 1 << 30});
    s.accept(-5);
    s.accept(4);
    EXPECT_EQ(s.sample(std::vector<float>{0.0f, 1.0f, 0.5f, 0.2f}), 1);
}

TEST(Sampler, PenalizedStepsDoNotAllocate) {
    const int vocab = 1000;
    const std::vector<float> logits = random_logits(vocab, 8);
    std::vector<std::int32_t> prompt(300);
    std::iota(prompt.begin(), prompt.end(), 0);
    Sampler s(vocab, {.temperature = 0.7f,
                      .top_k = 20,
                      .top_p = 0.8f,
                      .repetition_penalty = 1.1f,
                      .presence_penalty = 1.5f});
    Sampler greedy(vocab, {.repetition_penalty = 1.1f, .frequency_penalty = 0.2f});
    const test::AllocationCounter counter;
    s.begin(prompt);
    greedy.begin(prompt);
    for (int i = 0; i < 200; ++i) {
        s.accept(s.sample(logits));
        greedy.accept(greedy.sample(logits));
    }
    s.begin(prompt);  // a second sequence reuses the same arrays
    s.accept(s.sample(logits));
    EXPECT_EQ(counter.allocations(), 0);
}

// Screened sampling gives what sampling over the full logits gives, step after step (the same
// random draws), from bounds of any width around the logits, with penalties and with ties.
TEST(Sampler, ScreenedSamplingMatchesTheFullLogits) {
    const int vocab = 3000;
    const std::vector<SamplingParams> cases = {
        {},
        {.repetition_penalty = 1.3f},
        {.temperature = 0.7f, .top_k = 20, .top_p = 0.8f, .seed = 5},
        {.temperature = 1.0f, .top_k = 1, .seed = 6},
        {.temperature = 1.3f, .top_k = 200, .seed = 7, .frequency_penalty = 0.5f},
        {.temperature = 0.5f,
         .top_k = 5,
         .top_p = 0.9f,
         .seed = 8,
         .repetition_penalty = 0.8f,
         .presence_penalty = -1.5f},
        // logit_bias: a forced id, a banned one, a small push, on greedy and top-k, with a
        // penalty on a biased prompt id (40)
        {.logit_bias = {{17, 100.0f}}},
        {.logit_bias = {{123, 2.5f}, {40, -3.0f}, {2999, -100.0f}}},
        {.temperature = 0.9f,
         .top_k = 10,
         .seed = 9,
         .repetition_penalty = 1.4f,
         .logit_bias = {{40, 4.0f}, {7, 1.5f}, {7, 6.0f}}},
    };
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> width(0.0f, 1.5f);
    for (std::size_t c = 0; c < cases.size(); ++c) {
        Sampler full(vocab, cases[c]), screened(vocab, cases[c]);
        const std::vector<std::int32_t> prompt = {1, 2, 3, 2999, 40};
        full.begin(prompt);
        screened.begin(prompt);
        std::vector<float> lower(vocab), upper(vocab), values;
        std::vector<std::int32_t> ids(vocab);
        for (int step = 0; step < 60; ++step) {
            std::vector<float> logits = random_logits(vocab, std::uint32_t(100 * c + step));
            // Every third step: few distinct values, so ties cross the top-k threshold.
            if (step % 3 == 0) {
                for (float& v : logits) v = std::round(v * 2.0f) / 2.0f;
            }
            for (int i = 0; i < vocab; ++i) {
                lower[i] = logits[i] - width(rng);
                upper[i] = logits[i] + (step % 5 == 0 ? 0.0f : width(rng));
            }
            const int n = screened.screen_candidates(lower, upper, ids);
            ASSERT_GT(n, 0) << "case " << c << " step " << step;
            ASSERT_TRUE(std::is_sorted(ids.begin(), ids.begin() + n));
            values.clear();
            for (int i = 0; i < n; ++i) values.push_back(logits[std::size_t(ids[i])]);
            const std::int32_t got =
                screened.sample_candidates({ids.data(), std::size_t(n)}, values);
            const std::int32_t want = full.sample(logits);
            ASSERT_EQ(got, want) << "case " << c << " step " << step << " candidates " << n;
            full.accept(want);
            screened.accept(got);
        }
    }
}

// logit_bias adds to the logits before the penalties (vLLM's order): the distribution is the
// reference's for the biased logits; a later pair for the same id replaces the earlier one; ids
// outside the vocabulary are ignored; +100 forces an id, -100 bans it under greedy decoding.
TEST(Sampler, LogitBiasAddsBeforeThePenalties) {
    const int vocab = 50;
    std::vector<float> logits = random_logits(vocab, 11);
    const SamplingParams p{.temperature = 0.8f,
                           .repetition_penalty = 1.5f,
                           .logit_bias = {{3, 2.0f}, {9, -1.0f}, {3, 0.5f}, {77, 5.0f}, {-1, 1.f}}};
    const History h{.prompt = {3, 4}, .generated = {9}};
    std::vector<float> biased = logits;
    biased[3] += 0.5f;
    biased[9] -= 1.0f;
    SamplingParams unbiased = p;
    unbiased.logit_bias.clear();
    const std::vector<double> want = reference_distribution(biased, h, unbiased);
    Sampler s(vocab, p);
    s.begin(h.prompt);
    for (const std::int32_t id : h.generated) s.accept(id);
    std::vector<double> got(vocab);
    s.probabilities(logits, got);
    for (int i = 0; i < vocab; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;

    const std::int32_t best = argmax(logits);
    Sampler forced(vocab, {.logit_bias = {{(best + 1) % vocab, 100.0f}}});
    EXPECT_EQ(forced.sample(logits), (best + 1) % vocab);
    Sampler banned(vocab, {.logit_bias = {{best, -100.0f}}});
    EXPECT_NE(banned.sample(logits), best);
}

TEST(Sampler, ScreeningDeclinesWhatItCannotDecide) {
    const int vocab = 100;
    std::vector<float> lower(vocab, 0.0f), upper(vocab, 1.0f);
    std::vector<std::int32_t> ids(vocab), few(3);
    // Temperature without top-k needs every logit.
    EXPECT_EQ(Sampler(vocab, {.temperature = 0.7f}).screen_candidates(lower, upper, ids), -1);
    EXPECT_EQ(
        Sampler(vocab, {.temperature = 0.7f, .top_k = vocab}).screen_candidates(lower, upper, ids),
        -1);
    // Overlapping bounds: every id could win, more than `few` holds.
    EXPECT_EQ(Sampler(vocab, {}).screen_candidates(lower, upper, few), -1);
    EXPECT_EQ(Sampler(vocab, {}).screen_candidates(lower, upper, ids), vocab);
    // Bounds that are not numbers.
    lower[7] = NAN;
    EXPECT_EQ(Sampler(vocab, {}).screen_candidates(lower, upper, ids), -1);
    // A clear winner: one candidate.
    lower.assign(vocab, 0.0f);
    upper.assign(vocab, 1.0f);
    lower[42] = 2.0f;
    upper[42] = 3.0f;
    ASSERT_EQ(Sampler(vocab, {}).screen_candidates(lower, upper, ids), 1);
    EXPECT_EQ(ids[0], 42);
}

}  // namespace
}  // namespace qvl::runtime
