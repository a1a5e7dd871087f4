// peak/<kind>/threads=<t>: the machine limits every pct_peak counter divides by, as rows of their
// own, so that scripts (bench/e2e_bench.py) read the same figures this process measured:
// peak/fp32, peak/bf16 and peak/avx2_fp32 (the AVX2 tier's ymm FMA peak) carry GFLOPS, peak/dram
// (the fastest of 8 reads) and peak/dram_median (their median) carry GBps. The measurement happens
// once per process (bench_peaks.cpp); the timed loop only reports it.
#include <benchmark/benchmark.h>

#include <string>

#include "bench_peaks.h"

namespace qvl::bench {
namespace {

void report_peak(benchmark::State& state, double (*measure)(int), const char* counter,
                 int threads) {
    const double value = measure(threads);
    if (value <= 0.0) {
        state.SkipWithError("this CPU lacks the instructions of this peak loop");
        return;
    }
    for (auto _ : state) benchmark::DoNotOptimize(value);
    state.counters[counter] = value;
    state.counters["pct_peak"] = 100.0;
}

[[maybe_unused]] const bool registered = [] {
    for (int threads : {1, 2}) {
        const std::string suffix = "/threads=" + std::to_string(threads);
        benchmark::RegisterBenchmark(("peak/fp32" + suffix).c_str(), report_peak, &peak_gflops_f32,
                                     "GFLOPS", threads)
            ->Iterations(1);
        benchmark::RegisterBenchmark(("peak/bf16" + suffix).c_str(), report_peak, &peak_gflops_bf16,
                                     "GFLOPS", threads)
            ->Iterations(1);
        benchmark::RegisterBenchmark(("peak/avx2_fp32" + suffix).c_str(), report_peak,
                                     &peak_gflops_f32_avx2, "GFLOPS", threads)
            ->Iterations(1);
        benchmark::RegisterBenchmark(("peak/dram" + suffix).c_str(), report_peak, &dram_read_gbps,
                                     "GBps", threads)
            ->Iterations(1);
        benchmark::RegisterBenchmark(("peak/dram_median" + suffix).c_str(), report_peak,
                                     &dram_read_gbps_median, "GBps", threads)
            ->Iterations(1);
    }
    return true;
}();

}  // namespace
}  // namespace qvl::bench
