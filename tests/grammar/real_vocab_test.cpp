// The matcher on the real Qwen vocabulary (tests/data/tiny-qwen3vl/tokenizer.json, 151,936
// logits rows): every token of the tokenizer's own encoding of a valid document is allowed at
// its step, the end token only at the end; prints the mask time per step (a figure, not a limit).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "text/tokenizer.h"

namespace qvl::grammar {
namespace {

constexpr int kVocab = 151936;

struct RealVocab {
    text::Tokenizer tok;
    std::shared_ptr<const Vocab> vocab;
    std::int32_t end = -1;
};

const RealVocab& real_vocab() {
    static const RealVocab v = [] {
        auto tok = text::Tokenizer::load(QVL_TEST_DATA_DIR "/tiny-qwen3vl");
        EXPECT_TRUE(tok.ok());
        RealVocab r{std::move(tok).value(), nullptr, -1};
        r.end = r.tok.token_id("<|im_end|>");
        r.vocab = vocab_from_tokenizer(r.tok, kVocab);
        return r;
    }();
    return v;
}

// Walks doc's tokens through a matcher of gbnf; returns the mean mask time in microseconds.
double walk_document(std::string_view gbnf, std::string_view doc) {
    const RealVocab& rv = real_vocab();
    auto g = parse_gbnf(gbnf);
    EXPECT_TRUE(g.ok()) << g.status().message();
    Matcher m(std::make_shared<const Grammar>(std::move(g).value()), rv.vocab, {rv.end});
    auto ids = rv.tok.encode(doc);
    EXPECT_TRUE(ids.ok());
    double total_us = 0;
    for (const std::int32_t id : ids.value()) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto mask = m.mask();
        total_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                        .count();
        EXPECT_TRUE(m.allowed(mask, id)) << "token " << id << " '" << rv.tok.token_bytes(id) << "'";
        EXPECT_FALSE(m.allowed(mask, rv.end));
        EXPECT_TRUE(m.accept(id));
    }
    const auto mask = m.mask();
    EXPECT_TRUE(m.allowed(mask, rv.end));
    EXPECT_TRUE(m.accept(rv.end));
    return total_us / double(ids.value().size() + 1);
}

TEST(RealVocab, SchemaDocumentTokensAreAllowed) {
    auto gbnf = json_schema_to_gbnf(R"({"type":"object","properties":{
        "name":{"type":"string","maxLength":40},"total":{"type":"number","minimum":0,"maximum":100000},
        "items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},
          "qty":{"type":"integer","minimum":1,"maximum":99}},"required":["sku","qty"],"additionalProperties":false},
          "maxItems":5},
        "paid":{"type":"boolean"},"city":{"enum":["Zürich","東京","Paris"]}},
        "required":["name","total","items","paid","city"],"additionalProperties":false})");
    ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
    const double us = walk_document(gbnf.value(), R"({
  "name": "Acme GmbH – Rechnung №42 😀",
  "total": 1234.50,
  "items": [{"sku": "A-1", "qty": 3}, {"sku": "B\"2", "qty": 12}],
  "paid": false,
  "city": "東京"
})");
    std::printf("mask time per token (schema, real vocabulary): %.1f us\n", us);
}

TEST(RealVocab, FreeJsonObject) {
    const double us =
        walk_document(json_object_gbnf(), R"({"a": [1, 2.5e3, "x\ny"], "b": {"c": null}})");
    std::printf("mask time per token (json_object, real vocabulary): %.1f us\n", us);
}

// The whole-subtree shortcut for plain text gives the byte walk's mask at every step: strings
// near their length bound (the run of plain characters shorter than a token), escapes, classes
// that take only part of plain text or more than it, and states inside a split character.
void expect_same_masks(std::string_view gbnf, std::string_view doc) {
    SCOPED_TRACE(std::string(gbnf.substr(0, 60)));
    const RealVocab& rv = real_vocab();
    auto g = parse_gbnf(gbnf);
    ASSERT_TRUE(g.ok()) << g.status().message();
    const auto grammar = std::make_shared<const Grammar>(std::move(g).value());
    Matcher fast(grammar, rv.vocab, {rv.end});
    Matcher walked(grammar, rv.vocab, {rv.end});
    walked.use_plain_subtrees(false);
    auto ids = rv.tok.encode(doc);
    ASSERT_TRUE(ids.ok());
    int step = 0, allowed = 0;
    for (const std::int32_t id : ids.value()) {
        const auto a = fast.mask();
        const std::vector<std::uint64_t> want(walked.mask().begin(), walked.mask().end());
        ASSERT_TRUE(std::equal(a.begin(), a.end(), want.begin(), want.end())) << "step " << step;
        for (const std::uint64_t w : want) allowed += std::popcount(w);
        ASSERT_TRUE(fast.accept(id) && walked.accept(id))
            << "step " << step << " '" << rv.tok.token_bytes(id) << "'";
        ++step;
    }
    const auto a = fast.mask();
    const auto b = walked.mask();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
    EXPECT_GT(allowed, 1000 * step);  // strings were walked: most of the vocabulary allowed
}

TEST(RealVocab, PlainSubtreesGiveTheWalkedMask) {
    auto bounded = json_schema_to_gbnf(R"({"type":"array","items":{"type":"string",
        "maxLength":7},"maxItems":6})");
    ASSERT_TRUE(bounded.ok()) << bounded.status().message();
    expect_same_masks(bounded.value(),
                      R"(["abcdefg", "a\"b\\c", "東京東京", "😀 x", "𝔘𝔫𝔦𝔠𝔬𝔡", ""])");
    auto long_strings = json_schema_to_gbnf(R"({"type":"object","properties":{"a":{"type":
        "string","minLength":3,"maxLength":300}},"required":["a"],"additionalProperties":false})");
    ASSERT_TRUE(long_strings.ok()) << long_strings.status().message();
    expect_same_masks(
        long_strings.value(),
        R"({"a": "The quick brown fox – jumps over 13 lazy dogs; ½ of them \n sleep. )"
        R"(東京 Zürich 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀😀"})");
    expect_same_masks(json_object_gbnf(), R"({"k": "tab\there ünïcödé", "n": [1, "x y"]})");
    // A class with only part of plain text, one with more, one with all of it and no quote.
    expect_same_masks(R"(root ::= "<" [a-z ]* ">" [^\x00-\x1f]* "|" [^"\\]* "." )",
                      "<ab c>x\"y 東京 \\|plain text, 😀 more.");
}

}  // namespace
}  // namespace qvl::grammar
