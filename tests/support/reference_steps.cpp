#include "support/reference_steps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace qvl::test {

std::vector<ReferenceStep> reference_steps(const std::map<std::string, GoldenArray>& golden) {
    std::vector<ReferenceStep> steps;
    const GoldenArray& ids = golden.at("gen.top5_ids");
    const GoldenArray& logits = golden.at("gen.top5_logits");
    const auto k = std::size_t(ids.shape[1]);
    for (std::size_t s = 0; s < std::size_t(ids.shape[0]); ++s) {
        ReferenceStep step;
        for (std::size_t j = 0; j < k; ++j) {
            step.top_ids.push_back(std::int32_t(ids.values[s * k + j]));
            step.top_logits.push_back(logits.values[s * k + j]);
            step.scale = std::max(step.scale, std::abs(logits.values[s * k + j]));
        }
        steps.push_back(std::move(step));
    }
    if (!steps.empty()) {
        for (double v : golden.at("logits_last").values) {
            steps[0].scale = std::max(steps[0].scale, std::abs(v));
        }
    }
    return steps;
}

std::vector<runtime::Precision> precisions_under_test() {
#if defined(__SANITIZE_ADDRESS__)
    return {runtime::Precision::kF32, runtime::Precision::kBF16All};
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return {runtime::Precision::kF32, runtime::Precision::kBF16All};
#endif
#endif
    return {std::begin(runtime::kNamedPrecisions), std::end(runtime::kNamedPrecisions)};
}

// bf16 keeps 8 significant bits: one rounding moves a value by at most u = 2^-8 of itself.
constexpr double kBf16Unit = 1.0 / 256;

// Each bound counts the precision's roundings on the path to the logits, with room over the
// largest error measured on the five golden cases, every tier, prefill and 16 teacher-forced
// steps (GoldenTiers on a Zen 4, 2026-12-07; in units of u).
double logits_tolerance(runtime::Precision precision) {
    switch (precision) {
        case runtime::Precision::kF32:
            // f32 products of exactly widened bf16 weights: the oracle's strict tier (sums of
            // <= 1024 f32 products, 2^-24 each); measured 1.0e-6 on every tier.
            return 2e-5;
        case runtime::Precision::kF32KvBF16:
            // One rounding of each cached K and V (u each); everything else f32. The score and
            // the value roundings may add in a layer: 2 u; measured 1.12 u on every tier.
            return 2 * kBf16Unit;
        case runtime::Precision::kBF16:
            // The four product inputs of a layer (q|k|v, o, gate|up, down) and the cache are
            // rounded once each; they enter the residual stream at different points and partly
            // average out over the hidden size: 3 u; measured 1.87-1.95 u.
            return 3 * kBf16Unit;
        case runtime::Precision::kBF16All:
            // kBF16 plus attention's own operands in bf16 (Q, K, the probabilities, V): 2 u
            // more, 5 u; measured 3.53 u on the avx512bf16 tier (the other tiers run kBF16's
            // f32 attention: 1.95 u).
            return 5 * kBf16Unit;
        case runtime::Precision::kAuto:
            break;
    }
    ADD_FAILURE() << "no tolerance for precision " << runtime::precision_name(precision);
    return 0;
}

double expect_step_matches(std::span<const float> logits, const ReferenceStep& ref, double tol,
                           const std::string& what) {
    double worst = 0;
    for (std::size_t j = 0; j < ref.top_ids.size(); ++j) {
        const auto id = std::size_t(ref.top_ids[j]);
        if (id >= logits.size()) {
            ADD_FAILURE() << what << ": reference token " << id << " outside the logits";
            return INFINITY;
        }
        const double err = std::abs(double(logits[id]) - ref.top_logits[j]) / ref.scale;
        worst = std::max(worst, err);
        EXPECT_LE(err, tol) << what << ": token " << id << " logit " << logits[id] << ", reference "
                            << ref.top_logits[j];
    }
    const auto best = std::size_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (best != std::size_t(ref.top_ids[0])) {
        EXPECT_LT(ref.margin(), 2 * tol * ref.scale)
            << what << ": argmax " << best << " instead of the reference's " << ref.top_ids[0]
            << ", whose margin " << ref.margin() << " is wider than the error bound allows";
    }
    return worst;
}

int expect_tokens_follow(std::span<const std::int32_t> tokens,
                         const std::vector<std::int64_t>& reference,
                         const std::vector<ReferenceStep>& steps, double tol) {
    EXPECT_EQ(tokens.size(), reference.size());
    const std::size_t n = std::min({tokens.size(), reference.size(), steps.size()});
    for (std::size_t i = 0; i < n; ++i) {
        if (tokens[i] == reference[i]) continue;
        // A near tie may go either way; past it the contexts differ.
        EXPECT_LT(steps[i].margin(), 2 * tol * steps[i].scale)
            << "step " << i << ": token " << tokens[i] << " instead of " << reference[i]
            << ", whose reference margin " << steps[i].margin() << " the error bound cannot close";
        return int(i);
    }
    return int(n);
}

}  // namespace qvl::test
