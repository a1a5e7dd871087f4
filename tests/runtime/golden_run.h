// Shared by the quantized-format golden tests (golden_q8_test, golden_q4_test,
// golden_vision_q8_test): a golden case's prompt for a model, its last-position logits and
// greedy tokens in a bf16 session, and the error measures of issue 49's tables.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/model.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "support/golden.h"
#include "support/reference_generate.h"
#include "tiny_case.h"

namespace qvl::runtime::test_util {

// The sessions of these tests: two threads, bf16 products and KV cache.
inline SessionOptions golden_session_options() {
    SessionOptions so;
    so.threads = 2;
    so.ctx_size = 512;
    so.precision = Precision::kBF16;
    return so;
}

struct GoldenRun {
    std::vector<float> logits;  // after the prompt
    std::vector<std::int32_t> tokens;
};

// n_predict greedy tokens (EOS ignored) after the case's prompt.
inline GoldenRun run_golden_case(const model::Model& m, const std::string& name, int n_predict,
                                 const SessionOptions& options = golden_session_options()) {
    GoldenRun r;
    const PreparedPrompt prompt = golden_prompt(m, name);
    auto session = Session::create(m, options);
    EXPECT_TRUE(session.ok()) << session.status().message();
    if (!session.ok()) return r;
    GenerateParams gp;
    gp.n_predict = n_predict;
    gp.ignore_eos = true;
    ::qvl::test::GenerateHooks hooks;
    hooks.after_prefill = [&](const Session& s, int slot) {
        const std::span<const float> l = s.logits(slot);
        r.logits.assign(l.begin(), l.end());
    };
    auto result = ::qvl::test::generate(*session.value(), prompt, gp, hooks);
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (result.ok()) r.tokens = result.value().tokens;
    return r;
}

template <class T>
double cosine(const std::vector<float>& a, const std::vector<T>& b) {
    double dot = 0, na = 0, nb = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
        dot += a[i] * double(b[i]);
        na += double(a[i]) * a[i];
        nb += double(b[i]) * double(b[i]);
    }
    return dot / std::sqrt(na * nb);
}

// ||a - ref|| / ||ref||.
inline double relative_l2(const std::vector<float>& a, const std::vector<double>& ref) {
    double diff = 0, nr = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        diff += (a[i] - ref[i]) * (a[i] - ref[i]);
        nr += ref[i] * ref[i];
    }
    return std::sqrt(diff / nr);
}

// Leading tokens of a equal to b's.
inline std::size_t same_prefix(const std::vector<std::int32_t>& a,
                               const std::vector<std::int32_t>& b) {
    std::size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

}  // namespace qvl::runtime::test_util
