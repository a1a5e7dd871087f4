// Grammar-constrained decoding on the real 151,936-token Qwen vocabulary: the token mask per
// generated token (a fresh matcher walks a whole answer, so first-visit costs count, as they do
// in a request), the schema compile, and the vocabulary trie built on a model's first
// constrained request. The decode step these compete with is ~85-110 ms on 2 threads
// (bench/README.md), so the mask must stay within a few milliseconds.
// The tokenizer folder is $QVL_TOKENIZER_DIR, else tests/data/tiny-qwen3vl of this source tree.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/vocab.h"
#include "text/tokenizer.h"

namespace {

using qvl::grammar::Grammar;
using qvl::grammar::Matcher;
using qvl::grammar::Vocab;

constexpr int kVocabRows = 151936;

const qvl::text::Tokenizer& tokenizer() {
    static const qvl::text::Tokenizer* t = [] {
        std::filesystem::path dir =
            std::filesystem::path(QVL_SOURCE_DIR) / "tests" / "data" / "tiny-qwen3vl";
        if (const char* env = std::getenv("QVL_TOKENIZER_DIR")) dir = env;
        auto r = qvl::text::Tokenizer::load(dir);
        if (!r.ok()) {
            std::fprintf(stderr, "grammar_bench: %s\n", r.status().message().c_str());
            std::exit(1);
        }
        return new qvl::text::Tokenizer(std::move(r).value());
    }();
    return *t;
}

const std::shared_ptr<const Vocab>& vocab() {
    static const std::shared_ptr<const Vocab> v =
        qvl::grammar::vocab_from_tokenizer(tokenizer(), kVocabRows);
    return v;
}

// An invoice schema as applications send it: bounded strings, numbers, an array of objects,
// an enum with non-ASCII values.
const char* const kInvoiceSchema = R"({"type":"object","properties":{
    "name":{"type":"string","maxLength":40},"total":{"type":"number","minimum":0},
    "items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},
      "qty":{"type":"integer","minimum":1,"maximum":99}},"required":["sku","qty"],
      "additionalProperties":false},"maxItems":5},
    "paid":{"type":"boolean"},"city":{"enum":["Zürich","東京","Paris"]}},
    "required":["name","total","items","paid","city"],"additionalProperties":false})";
const char* const kInvoice = R"({
  "name": "Acme GmbH – Rechnung №42",
  "total": 1234.50,
  "items": [{"sku": "A-1", "qty": 3}, {"sku": "B\"2", "qty": 12}],
  "paid": false,
  "city": "東京"
})";

std::shared_ptr<const Grammar> compile(const std::string& gbnf) {
    auto g = qvl::grammar::parse_gbnf(gbnf);
    if (!g.ok()) {
        std::fprintf(stderr, "grammar_bench: %s\n", g.status().message().c_str());
        std::exit(1);
    }
    return std::make_shared<const Grammar>(std::move(g).value());
}

std::string schema_gbnf(const char* schema) {
    auto gbnf = qvl::grammar::json_schema_to_gbnf(schema);
    if (!gbnf.ok()) {
        std::fprintf(stderr, "grammar_bench: %s\n", gbnf.status().message().c_str());
        std::exit(1);
    }
    return gbnf.value();
}

// Time per token of walking `doc` (mask, then accept) through a fresh matcher.
void walk(benchmark::State& state, const std::shared_ptr<const Grammar>& g, const char* doc) {
    auto ids = tokenizer().encode(doc);
    if (!ids.ok()) {
        state.SkipWithError("the document does not encode");
        return;
    }
    const std::int32_t end = tokenizer().token_id("<|im_end|>");
    for (auto _ : state) {
        Matcher m(g, vocab(), {end});
        for (const std::int32_t id : ids.value()) {
            benchmark::DoNotOptimize(m.mask().data());
            if (!m.accept(id)) {
                state.SkipWithError("the grammar refused the document");
                return;
            }
        }
    }
    // Seconds per token (printed with an SI prefix: 1.2m is 1.2 ms).
    state.counters["s_per_token"] =
        benchmark::Counter(double(ids.value().size()) * double(state.iterations()),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_GrammarMask_Schema(benchmark::State& state) {
    walk(state, compile(schema_gbnf(kInvoiceSchema)), kInvoice);
}
BENCHMARK(BM_GrammarMask_Schema)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GrammarMask_JsonObject(benchmark::State& state) {
    walk(state, compile(qvl::grammar::json_object_gbnf()), kInvoice);
}
BENCHMARK(BM_GrammarMask_JsonObject)->Unit(benchmark::kMillisecond)->UseRealTime();

// The worst case for a per-state mask cache: inside a length-bounded string every position is
// a new state.
void BM_GrammarMask_BoundedString(benchmark::State& state) {
    walk(state, compile(schema_gbnf(R"({"type":"string","maxLength":400})")),
         R"("The quick brown fox jumps over the lazy dog; Zwölf Boxkämpfer jagen Viktor quer )"
         R"(über den großen Sylter Deich. 敏捷的棕色狐狸跳过了懒狗。 Portez ce vieux whisky au )"
         R"(juge blond qui fume.")");
}
BENCHMARK(BM_GrammarMask_BoundedString)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GrammarCompile_Invoice(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(compile(schema_gbnf(kInvoiceSchema)));
}
BENCHMARK(BM_GrammarCompile_Invoice)->Unit(benchmark::kMicrosecond);

void BM_GrammarVocabTrie(benchmark::State& state) {
    for (auto _ : state) {
        benchmark::DoNotOptimize(qvl::grammar::vocab_from_tokenizer(tokenizer(), kVocabRows));
    }
}
BENCHMARK(BM_GrammarVocabTrie)->Unit(benchmark::kMillisecond);

}  // namespace
