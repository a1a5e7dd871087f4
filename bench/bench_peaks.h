// The machine's limits as this process measures them, for the pct_peak counters of every
// benchmark file: an FP32 FMA loop (zmm vfmadd231ps, or ymm on AVX2-only CPUs), a BF16 dot loop
// (zmm vdpbf16ps; 0 where the CPU lacks it) and a DRAM read loop over a buffer far larger than
// the L3. Each figure is measured once, lazily, on first use, per thread count (threads run the
// loop concurrently; the figure is their total). Thread-safe.
#pragma once

namespace qvl::bench {

double peak_gflops_f32(int threads);   // GFLOP/s (an FMA counts 2)
double peak_gflops_bf16(int threads);  // GFLOP/s (a bf16 pair product-add counts 4 per lane)
double dram_read_gbps(int threads);    // GB/s (1e9 bytes)

}  // namespace qvl::bench
