// peak/dram_gemv/threads=T: the DRAM bandwidth decode gets, measured with decode's own reads.
// peak/dram (bench_peaks.cpp) reads one buffer with one plain stream per thread; the engine's
// GEMVs read 16-output weight panels through several prefetched streams per task, and on the
// 2-core Zen 4 guest here that gets ~1.6x more: the quiet validation of the scaling simulator
// (bench/scaling.py) had peak/dram at 17.8 / 19.5 GB/s (1 / 2 threads) while its decode read
// ~18 / ~30 GB/s, so a bandwidth bound from peak/dram made the 2-thread decode 55 % too slow.
// This row runs the engine's GemmRunner as a 4-sequence decode step does (m = 4, bf16 panel
// weights, kBF16 products, the layer's epilogue) over the text layer's four linears, repeated
// over copies larger than the last-level cache, and reports the weight bytes per second of the
// fastest pass (GBps) and of the median pass (median_GBps). The scaling simulator takes B(1) and
// B(2) of this machine from it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"
#include "bench_peaks.h"
#include "kernels/gemm.h"
#include "kernels/gemm_run.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/weight_panels.h"

namespace qvl::bench {
namespace {

struct Linear {
    int n, k;
    bool gated, residual;
};
// One text decoder layer of Qwen3-VL-2B: fused q/k/v, o (+ residual), gate/up, down (+ residual).
constexpr Linear kLayer[] = {{4096, 2048, false, false},
                             {2048, 2048, false, true},
                             {6144, 2048, true, false},
                             {2048, 6144, false, true}};
constexpr int kRows = 4;  // a batched decode step of 4 sequences
constexpr int kPasses = 7;

std::size_t layer_bytes() {
    std::size_t b = 0;
    for (const Linear& l : kLayer) b += std::size_t(l.n) * l.k * 2 * (l.gated ? 2 : 1);
    return b;
}

void run_stream(benchmark::State& state) {
    const int threads = int(state.range(0));
    const int layers = int((beyond_cache_bytes() + layer_bytes() - 1) / layer_bytes());
    // Every byte the same bf16 value (0x3c3c, ~0.011): the reads, not the values, are measured.
    auto buf =
        base::AlignedBuffer::allocate(layer_bytes() * std::size_t(layers), "stream weights", false);
    if (!buf.ok()) {
        state.SkipWithError("cannot allocate the stream's weights");
        return;
    }
    std::memset(buf->data(), 0x3c, buf->size());
    std::vector<float> a(std::size_t(kRows) * 6144, 0.5f), c(std::size_t(kRows) * 12288, 0.0f);
    base::ThreadPool pool(threads);
    const kernels::KernelTable& table = kernels::kernels_for(kernels::best_isa());
    kernels::GemmRunner runner;
    auto pass = [&] {
        const std::byte* w = buf->data();
        for (int layer = 0; layer < layers; ++layer) {
            for (const Linear& l : kLayer) {
                const std::size_t half = std::size_t(l.n) * l.k * 2;
                kernels::GemmArgs g{.m = kRows,
                                    .n = l.n,
                                    .k = l.k,
                                    .a = a.data(),
                                    .lda = l.k,
                                    .w = w,
                                    .w_up = l.gated ? w + half : nullptr,
                                    .ldw = l.k / 2,
                                    .w_type = kernels::WeightType::kBF16Panels,
                                    .residual = l.residual ? c.data() : nullptr,
                                    .ldr = l.n,
                                    .c = c.data(),
                                    .ldc = l.n,
                                    .precision = kernels::GemmPrecision::kBF16};
                runner.run(table, g, pool);
                w += half * (l.gated ? 2 : 1);
            }
        }
    };
    std::vector<double> seconds;
    for (auto _ : state) {
        pass();  // the first pass faults nothing in (memset did) but warms the pool and caches
        for (int i = 0; i < kPasses; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            pass();
            seconds.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
    }
    std::sort(seconds.begin(), seconds.end());
    const double bytes = double(buf->size());
    state.counters["GBps"] = bytes / seconds.front() / 1e9;
    state.counters["median_GBps"] = bytes / seconds[seconds.size() / 2] / 1e9;
    state.counters["pct_peak"] = 100.0 * bytes / seconds.front() / 1e9 / dram_read_gbps(threads);
}

[[maybe_unused]] const bool registered = [] {
    benchmark::RegisterBenchmark("peak/dram_gemv", run_stream)
        ->ArgName("threads")
        ->Arg(1)
        ->Arg(2)
        ->Iterations(1)
        ->UseRealTime();
    return true;
}();

}  // namespace
}  // namespace qvl::bench
