// Attention on the Qwen3-VL-2B shapes: vision (16 heads x 64, one image of N patches),
// causal GQA prefill (16 query heads over 8 kv heads x 128, KV arena layout) and decode (one
// query over ctx cached positions). Vision/prefill report GFLOPS (4 * head_dim FLOP per visible
// (query, key, head)); decode reports GBps of K and V bytes streamed. The avx512bf16 rows run
// with round_bf16 (bf16 products, as the model does by default).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "base/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#if __has_include("bench_peaks.h")
#include "bench_peaks.h"
#define QVL_HAVE_BENCH_PEAKS 1
#endif

namespace qvl {
namespace {

using kernels::AttentionArgs;
using kernels::Isa;

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// GFLOPS (or GBps) counter and, when the peaks helper is present, pct_peak against the FP32
// FMA peak, the BF16 dot peak for the avx512bf16 rows (their products run on vdpbf16ps), or the
// DRAM read bandwidth, measured in this process for the same thread count.
void report(benchmark::State& state, const char* unit, double amount, int threads, Isa isa) {
    state.counters[unit] =
        benchmark::Counter(amount * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
#ifdef QVL_HAVE_BENCH_PEAKS
    const bool flops = std::string(unit) == "GFLOPS";
    const double peak = !flops                    ? bench::dram_read_gbps(threads)
                        : isa == Isa::kAvx512Bf16 ? bench::peak_gflops_bf16(threads)
                                                  : bench::peak_gflops_f32(threads);
    state.counters["pct_peak"] = benchmark::Counter(100.0 * amount * 1e-9 / peak,
                                                    benchmark::Counter::kIsIterationInvariantRate);
#else
    (void)threads, (void)isa;
#endif
}

void run(const AttentionArgs& a, Isa isa, base::ThreadPool& pool) {
    const int n = kernels::attention_num_tasks(a, pool.size());
    pool.parallel_for(n, [&](int t) { kernels::kernels_for(isa).attention_task(a, t, n); });
}

void bm_vision(benchmark::State& state, int n, Isa isa, int threads) {
    const int heads = 16, hd = 64, row = 3 * heads * hd;
    std::vector<float> qkv = random_floats(std::size_t(n) * row, 1),
                       out(std::size_t(n) * heads * hd);
    AttentionArgs a{.n_q = n,
                    .n_kv = n,
                    .n_heads = heads,
                    .n_kv_heads = heads,
                    .head_dim = hd,
                    .q = qkv.data(),
                    .q_row_stride = row,
                    .q_head_stride = hd,
                    .k = qkv.data() + heads * hd,
                    .k_row_stride = row,
                    .k_head_stride = hd,
                    .v = qkv.data() + 2 * heads * hd,
                    .v_row_stride = row,
                    .v_head_stride = hd,
                    .out = out.data(),
                    .out_row_stride = heads * hd,
                    .out_head_stride = hd,
                    .scale = 0.125f,
                    .round_bf16 = isa == Isa::kAvx512Bf16};
    base::ThreadPool pool(threads);
    for (auto _ : state) {
        run(a, isa, pool);
        benchmark::ClobberMemory();
    }
    report(state, "GFLOPS", 4.0 * double(n) * n * hd * heads, threads, isa);
}

struct TextProblem {
    std::vector<float> q, kv, out;
    std::vector<std::uint16_t> kv16;
    AttentionArgs a;
    TextProblem(int n_q, int ctx) {
        const int heads = 16, kv_heads = 8, hd = 128, max_ctx = ctx;
        q = random_floats(std::size_t(n_q) * heads * hd, 2);
        kv = random_floats(2 * std::size_t(kv_heads) * max_ctx * hd, 3);
        out.resize(std::size_t(n_q) * heads * hd);
        a = {.n_q = n_q,
             .n_kv = ctx,
             .n_heads = heads,
             .n_kv_heads = kv_heads,
             .head_dim = hd,
             .q = q.data(),
             .q_row_stride = heads * hd,
             .q_head_stride = hd,
             .k = kv.data(),
             .k_row_stride = hd,
             .k_head_stride = std::ptrdiff_t(max_ctx) * hd,
             .v = kv.data() + std::size_t(kv_heads) * max_ctx * hd,
             .v_row_stride = hd,
             .v_head_stride = std::ptrdiff_t(max_ctx) * hd,
             .out = out.data(),
             .out_row_stride = heads * hd,
             .out_head_stride = hd,
             .scale = 0.08838834764831845f,
             .causal = true,
             .q_pos0 = ctx - n_q,
             .incremental = true};  // the text decoder's attention over its KV cache
    }
    // K and V as a bf16 arena (the default outside f32 precision) instead of f32.
    void use_bf16_kv() {
        kv16.resize(kv.size());
        for (std::size_t i = 0; i < kv.size(); ++i) kv16[i] = base::f32_to_bf16(kv[i]).bits;
        const std::size_t v_off = static_cast<const float*>(a.v) - static_cast<const float*>(a.k);
        a.k = kv16.data();
        a.v = kv16.data() + v_off;
        a.kv_type = kernels::KvType::kBF16;
    }
};

void bm_prefill(benchmark::State& state, int n, Isa isa, int threads) {
    TextProblem p(n, n);
    p.a.round_bf16 = isa == Isa::kAvx512Bf16;
    base::ThreadPool pool(threads);
    for (auto _ : state) {
        run(p.a, isa, pool);
        benchmark::ClobberMemory();
    }
    const double visible = double(n) * (n + 1) / 2;
    report(state, "GFLOPS", 4.0 * visible * 128 * 16, threads, isa);
}

void bm_decode(benchmark::State& state, int ctx, Isa isa, int threads, bool round_bf16,
               bool bf16_kv = false) {
    // 28 layers' worth of caches, cycled, so K/V come from DRAM as in a real decode step.
    const int layers = 28;
    std::vector<TextProblem> p;
    p.reserve(layers);
    for (int l = 0; l < layers; ++l) p.emplace_back(1, ctx);
    for (TextProblem& x : p) {
        x.a.round_bf16 = round_bf16;
        if (bf16_kv) x.use_bf16_kv();
    }
    base::ThreadPool pool(threads);
    int l = 0;
    for (auto _ : state) {
        run(p[l].a, isa, pool);
        l = (l + 1) % layers;
        benchmark::ClobberMemory();
    }
    report(state, "GBps", 2.0 * 8 * ctx * 128 * (bf16_kv ? 2 : sizeof(float)), threads, isa);
}

int register_all() {
    for (Isa isa : kernels::all_isas()) {
        if (!kernels::isa_supported(isa) || isa == Isa::kScalar) continue;
        const std::string is = kernels::isa_name(isa);
        for (int t : {1, 2}) {
            const std::string th = "/threads=" + std::to_string(t);
            for (int n : {784, 3520}) {
                benchmark::RegisterBenchmark(
                    ("attention/vision/M=" + std::to_string(n) + "/" + is + th).c_str(),
                    [=](benchmark::State& s) { bm_vision(s, n, isa, t); })
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime()
                    ->MinTime(0.2);
            }
            for (int n : {212, 896}) {
                benchmark::RegisterBenchmark(
                    ("attention/prefill/M=" + std::to_string(n) + "/" + is + th).c_str(),
                    [=](benchmark::State& s) { bm_prefill(s, n, isa, t); })
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime()
                    ->MinTime(0.2);
            }
            for (int ctx : {256, 1024, 4096}) {
                benchmark::RegisterBenchmark(
                    ("attention/decode/ctx=" + std::to_string(ctx) + "/" + is + th).c_str(),
                    [=](benchmark::State& s) { bm_decode(s, ctx, isa, t, false); })
                    ->Unit(benchmark::kMicrosecond)
                    ->UseRealTime()
                    ->MinTime(0.2);
                // What the bf16 precisions run: a bf16 KV arena, with bf16 products where the
                // tier has them.
                std::string kv_name = "attention/decode_kvbf16/ctx=";
                kv_name += std::to_string(ctx);
                kv_name += "/";
                kv_name += is;
                kv_name += th;
                benchmark::RegisterBenchmark(kv_name.c_str(),
                                             [=](benchmark::State& s) {
                                                 bm_decode(s, ctx, isa, t, isa == Isa::kAvx512Bf16,
                                                           true);
                                             })
                    ->Unit(benchmark::kMicrosecond)
                    ->UseRealTime()
                    ->MinTime(0.2);
                if (isa != Isa::kAvx512Bf16) continue;
                // round_bf16 (the default bf16 precisions): the bf16 kernel serves decode too.
                benchmark::RegisterBenchmark(
                    ("attention/decode_bf16/ctx=" + std::to_string(ctx) + "/" + is + th).c_str(),
                    [=](benchmark::State& s) { bm_decode(s, ctx, isa, t, true); })
                    ->Unit(benchmark::kMicrosecond)
                    ->UseRealTime()
                    ->MinTime(0.2);
            }
        }
    }
    return 0;
}

const int registered = register_all();

}  // namespace
}  // namespace qvl
