// The float64 reference's decode steps (gen.top5_ids / gen.top5_logits of a golden file) and
// the checks every precision's logits and greedy tokens must pass against them, with the
// tolerance stated per precision (runtime tests: golden tiers, engine, batch).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "support/golden.h"

namespace qvl::test {

// The reference at one greedy step: its five best tokens and their logits (best first), and the
// scale errors are relative to (max |logit| of the step: the full vector's at the prefill, the
// top five's at decode steps, where the file keeps only those).
struct ReferenceStep {
    std::vector<std::int32_t> top_ids;
    std::vector<double> top_logits;
    double scale = 0;
    double margin() const { return top_logits[0] - top_logits[1]; }
};

// Step i is the reference's logits after the prompt (i = 0) or after decoding its i-th generated
// token; generated_ids[i] is its argmax.
std::vector<ReferenceStep> reference_steps(const std::map<std::string, GoldenArray>& golden);

// The named precisions the end-to-end tier tests run: all four, or under the sanitizers (a
// memory-safety run, where the numbers add nothing and every step is ~10x slower) kF32 and
// kBF16All, which between them reach every f32 and bf16 kernel path.
std::vector<runtime::Precision> precisions_under_test();

// Largest error of the logits relative to the reference's max |logit| (see the .cpp for how each
// bound follows from the precision's rounding and what was measured).
double logits_tolerance(runtime::Precision precision);

// The engine's logits at one step against the reference's: every one of the reference's five
// best tokens within tol * scale, and the engine's argmax is the reference's unless the
// reference's own top-two margin is below 2 * tol * scale (then no bounded error can keep the
// order). Returns the step's largest error relative to scale. `what` names the step in failures.
double expect_step_matches(std::span<const float> logits, const ReferenceStep& ref, double tol,
                           const std::string& what);

// Free-running greedy tokens against the reference's: identical up to the first step whose
// reference margin is below 2 * tol * scale (the margin rule; from there on the contexts may
// differ, and the teacher-forced steps keep being compared instead). Returns the steps compared.
int expect_tokens_follow(std::span<const std::int32_t> tokens,
                         const std::vector<std::int64_t>& reference,
                         const std::vector<ReferenceStep>& steps, double tol);

}  // namespace qvl::test
