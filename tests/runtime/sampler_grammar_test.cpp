// A grammar-constrained Sampler: every choice is one the grammar allows, the screened path
// (bounds, then exact logits of the candidates) picks what the full path picks under every
// sampling setting and penalty, and a bounded grammar ends with the end token.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "runtime/sampler.h"

namespace qvl::runtime {
namespace {

struct Constrained {
    std::shared_ptr<const grammar::Grammar> grammar;
    std::shared_ptr<const grammar::Vocab> vocab;
    std::int32_t end = 0;
};

Constrained make_setup() {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, char(b));
    for (const char* s : {"{\"", "\":", "\"a\"", "true", "false", ", ", "ab", "\xC3", "\xA9"}) {
        bytes.emplace_back(s);
    }
    bytes.resize(300);  // 265..299: no bytes (padding rows); 299: the end token
    auto gbnf = grammar::json_schema_to_gbnf(
        R"({"type":"object","properties":{"a":{"type":"string","maxLength":5},"b":{"type":"boolean"},
            "c":{"type":"array","items":{"type":"integer","minimum":0,"maximum":99},"maxItems":3}},
            "required":["a","b","c"],"additionalProperties":false})");
    EXPECT_TRUE(gbnf.ok());
    auto g = grammar::parse_gbnf(gbnf.value());
    EXPECT_TRUE(g.ok());
    return {std::make_shared<const grammar::Grammar>(std::move(g).value()),
            std::make_shared<const grammar::Vocab>(bytes), 299};
}

std::vector<float> random_logits(int vocab, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 3.0f);
    std::vector<float> v(std::size_t(vocab), 0.0f);
    for (float& x : v) x = d(rng);
    return v;
}

TEST(SamplerGrammar, ScreenedEqualsFullAndEveryChoiceIsAllowed) {
    const Constrained s = make_setup();
    const int vocab = s.vocab->size();
    const std::vector<SamplingParams> cases = {
        {},
        {.repetition_penalty = 1.3f, .presence_penalty = 0.5f},
        {.temperature = 0.9f, .top_k = 20, .seed = 4},
        {.temperature = 1.5f, .top_k = 3, .top_p = 0.7f, .seed = 5, .frequency_penalty = 1.0f},
        {.temperature = 0.8f, .top_k = 250, .seed = 6},  // top-k above the allowed count
    };
    for (std::size_t c = 0; c < cases.size(); ++c) {
        Sampler full(vocab, cases[c]), screened(vocab, cases[c]);
        full.constrain(std::make_unique<grammar::Matcher>(s.grammar, s.vocab, std::vector{s.end}));
        screened.constrain(
            std::make_unique<grammar::Matcher>(s.grammar, s.vocab, std::vector{s.end}));
        grammar::Matcher check(s.grammar, s.vocab, {s.end});
        full.begin(std::vector<std::int32_t>{1, 2, 3});
        screened.begin(std::vector<std::int32_t>{1, 2, 3});
        std::vector<std::int32_t> ids(std::size_t(vocab), 0);
        std::vector<float> values;
        bool ended = false;
        for (int step = 0; step < 400 && !ended; ++step) {
            const std::vector<float> logits = random_logits(vocab, std::uint32_t(1000 * c + step));
            const int n = screened.screen_candidates(logits, logits, ids);
            ASSERT_GT(n, 0) << "case " << c << " step " << step;
            values.clear();
            for (int i = 0; i < n; ++i) values.push_back(logits[std::size_t(ids[std::size_t(i)])]);
            const std::int32_t got =
                screened.sample_candidates({ids.data(), std::size_t(n)}, values);
            const std::int32_t want = full.sample(logits);
            ASSERT_EQ(got, want) << "case " << c << " step " << step;
            ASSERT_TRUE(check.accept(want))
                << "case " << c << " step " << step << " token " << want;
            ended = want == s.end;
            full.accept(want);
            screened.accept(got);
        }
        EXPECT_TRUE(ended) << "case " << c << ": the bounded grammar did not end";
        EXPECT_TRUE(check.finished());
    }
}

TEST(SamplerGrammar, ProbabilitiesStayInsideTheMask) {
    const Constrained s = make_setup();
    Sampler sampler(s.vocab->size(), {.temperature = 1.0f});
    sampler.constrain(std::make_unique<grammar::Matcher>(s.grammar, s.vocab, std::vector{s.end}));
    const std::vector<float> logits = random_logits(s.vocab->size(), 9);
    std::vector<double> p(std::size_t(s.vocab->size()), 0.0);
    sampler.probabilities(logits, p);
    double total = 0;
    for (int id = 0; id < s.vocab->size(); ++id) {
        const bool allowed = id == '{' || id == 256;  // '{' or '{"'
        EXPECT_EQ(p[std::size_t(id)] > 0, allowed) << id;
        total += p[std::size_t(id)];
    }
    EXPECT_NEAR(total, 1.0, 1e-9);
}

}  // namespace
}  // namespace qvl::runtime
