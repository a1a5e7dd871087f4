// The machine's limits as this process measures them, for the pct_peak counters of every
// benchmark file: an FP32 FMA loop (zmm vfmadd231ps, or ymm on AVX2-only CPUs), a BF16 dot loop
// (zmm vdpbf16ps; 0 where the CPU lacks it) and a DRAM read loop over a buffer far larger than
// the L3. Each figure is measured once, lazily, on first use, per thread count (threads run the
// loop concurrently; the figure is their total). Thread-safe.
#pragma once

#include <cstddef>

namespace qvl::bench {

double peak_gflops_f32(int threads);   // GFLOP/s (an FMA counts 2)
double peak_gflops_bf16(int threads);  // GFLOP/s (a bf16 pair product-add counts 4 per lane)
// The AVX2 tier's FP32 peak (ymm vfmadd231ps) on any CPU with AVX2: what QVL_ISA=avx2 runs on an
// AVX-512 machine, so its floors divide by this rather than by the zmm figure; 0 without AVX2.
double peak_gflops_f32_avx2(int threads);
double dram_read_gbps(int threads);  // GB/s (1e9 bytes), the fastest of 8 reads
// The median of the same 8 reads: what a shared host sustains, as opposed to its best moment.
double dram_read_gbps_median(int threads);

// Bytes a working set needs to come from DRAM rather than the L3: 4x the L3 this process reports
// (sysconf), at least 1 GiB. Some server parts have an L3 of 260 MB and more, where a fixed
// 256 MiB buffer is mostly cache hits and reads ~40 % faster than DRAM.
std::size_t beyond_cache_bytes();

}  // namespace qvl::bench
