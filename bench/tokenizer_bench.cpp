// Tokenizer benchmarks: loading the real 11 MB Qwen tokenizer.json (target <= 100 ms) and
// encode/decode throughput on one thread (target >= 20 MB/s encode on English prose).
// The model folder is $QVL_TOKENIZER_DIR, else tests/data/tiny-qwen3vl of this source tree.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "text/tokenizer.h"

namespace {

std::filesystem::path model_dir() {
    if (const char* env = std::getenv("QVL_TOKENIZER_DIR")) return env;
    return std::filesystem::path(QVL_SOURCE_DIR) / "tests" / "data" / "tiny-qwen3vl";
}

const qvl::text::Tokenizer& tokenizer() {
    static const qvl::text::Tokenizer* t = [] {
        auto r = qvl::text::Tokenizer::load(model_dir());
        if (!r.ok()) {
            std::fprintf(stderr, "tokenizer_bench: %s\n", r.status().message().c_str());
            std::exit(1);
        }
        return new qvl::text::Tokenizer(std::move(r).value());
    }();
    return *t;
}

// About 1 MiB of English prose: the GPL text every Debian system ships, else a built-in
// paragraph (less varied, so a little faster).
const std::string& english_prose() {
    static const std::string text = [] {
        std::string base;
        std::ifstream in("/usr/share/common-licenses/GPL-3");
        if (in) {
            std::stringstream ss;
            ss << in.rdbuf();
            base = ss.str();
        }
        if (base.size() < 1000) {
            base =
                "It was the best of times, it was the worst of times, it was the age of wisdom, "
                "it was the age of foolishness, it was the epoch of belief, it was the epoch of "
                "incredulity, it was the season of Light, it was the season of Darkness, it was "
                "the spring of hope, it was the winter of despair. We had everything before us, "
                "we had nothing before us; we were all going direct to Heaven, we were all going "
                "direct the other way.\n";
        }
        std::string out;
        while (out.size() < (1u << 20)) out += base;
        return out;
    }();
    return text;
}

void BM_TokenizerLoad(benchmark::State& state) {
    for (auto _ : state) {
        auto t = qvl::text::Tokenizer::load(model_dir());
        if (!t.ok()) state.SkipWithError(t.status().message().c_str());
        benchmark::DoNotOptimize(t);
    }
    state.SetLabel(model_dir().string());
}
BENCHMARK(BM_TokenizerLoad)
    ->Name("tokenizer/load/qwen3")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

void BM_TokenizerEncode(benchmark::State& state) {
    const auto& tok = tokenizer();
    const std::string& text = english_prose();
    std::size_t n_tokens = 0;
    for (auto _ : state) {
        auto ids = tok.encode(text);
        if (!ids.ok()) state.SkipWithError(ids.status().message().c_str());
        n_tokens = ids->size();
        benchmark::DoNotOptimize(ids);
    }
    state.SetBytesProcessed(std::int64_t(state.iterations() * text.size()));
    state.counters["tokens"] = double(n_tokens);
    state.counters["MBps"] = benchmark::Counter(double(text.size()) * 1e-6,
                                                benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TokenizerEncode)
    ->Name("tokenizer/encode/english_1MiB")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

void BM_TokenizerEncodeMixed(benchmark::State& state) {
    const auto& tok = tokenizer();
    std::string text;
    std::string base;
    for (const char* part :
         {"这是一张商品截图，", "图里有哪些文字？", " Привет, мир!", " emoji 😀👍🏽",
          " Tiếng Việt có dấu.", " def f(x):\n    return x * 2\n", " 3.14159 and 2.71828",
          " — “smart quotes” "}) {
        base += part;
    }
    while (text.size() < (1u << 20)) text += base;
    for (auto _ : state) {
        auto ids = tok.encode(text);
        benchmark::DoNotOptimize(ids);
    }
    state.counters["MBps"] = benchmark::Counter(double(text.size()) * 1e-6,
                                                benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TokenizerEncodeMixed)
    ->Name("tokenizer/encode/mixed_1MiB")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

// Long pre-tokens and runs (the wall-clock guards that tokenizer_test once had): one 100 KiB
// word (the BPE heap strategy), and 50 000 spaces, newlines, '!' and digits.
void BM_TokenizerEncodeLong(benchmark::State& state, std::string text) {
    const auto& tok = tokenizer();
    for (auto _ : state) {
        auto ids = tok.encode(text);
        if (!ids.ok()) state.SkipWithError(ids.status().message().c_str());
        benchmark::DoNotOptimize(ids);
    }
    state.counters["MBps"] = benchmark::Counter(double(text.size()) * 1e-6,
                                                benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_TokenizerEncodeLong, letters, std::string(100 * 1024, 'a'))
    ->Name("tokenizer/encode/letters_100KiB")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TokenizerEncodeLong, runs,
                  std::string(50000, ' ') + std::string(50000, '\n') + std::string(50000, '!') +
                      std::string(50000, '7'))
    ->Name("tokenizer/encode/runs_200KB")
    ->Unit(benchmark::kMillisecond);

void BM_TokenizerDecodeStream(benchmark::State& state) {
    const auto& tok = tokenizer();
    const auto ids = tok.encode(english_prose()).value();
    for (auto _ : state) {
        qvl::text::StreamDecoder d(tok);
        std::size_t n = 0;
        for (const std::int32_t id : ids) n += d.push(id).size();
        benchmark::DoNotOptimize(n);
    }
    state.counters["tokens_per_s"] =
        benchmark::Counter(double(ids.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TokenizerDecodeStream)
    ->Name("tokenizer/stream_decode/english_1MiB")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

}  // namespace
