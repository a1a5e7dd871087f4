// Instruction-set tiers and the choice among them. ISA-specific code lives in files named
// *_avx2.cpp / *_avx512.cpp / *_avx512bf16.cpp, built with those flags only; every kernel of a
// tier is reached through that tier's KernelTable (kernels/kernel_table.h).
#pragma once

#include <string_view>
#include <vector>

namespace qvl::kernels {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };

const char* isa_name(Isa isa);  // "scalar", "avx2", "avx512", "avx512bf16"
bool parse_isa(std::string_view name, Isa* out);

// Whether this CPU (and OS) can run code of that tier.
bool isa_supported(Isa isa);

// The best tier this CPU (and OS) runs, from the CPU features alone. Decided once.
Isa best_isa();

// `requested`, lowered to best_isa() when the CPU cannot run it (tiers are ordered: each one
// needs everything the tier below needs).
Isa resolve_isa(Isa requested);

// Whether packed GEMMs (m > 32) with bf16 products should run on vdpbf16ps (the avx512bf16
// tier's kernel) rather than on f32 FMAs over bf16 values widened to f32 (the avx512 tier's,
// same products, f32 sums). AMD cores run one vdpbf16ps per FMA slot, twice the FLOPs of an FMA;
// the Intel Xeons seen here run it at about half the FMA rate, so the FMA kernel wins there
// (bench/README.md, "Kernel design measurements"). A pure function of the CPU, so results never
// change between runs on one machine. GEMV (decode, m <= 32) is bandwidth-bound and keeps
// vdpbf16ps everywhere.
bool bf16_dot_beats_fma(bool cpu_has_avx512_bf16, bool cpu_is_intel);
// This process's policy: bf16_dot_beats_fma() of this CPU unless overridden (tests and
// benchmarks use the override to reach each kernel on any CPU). Thread-safe.
bool bf16_dot_for_gemm();
void set_bf16_dot_for_gemm(bool use_bf16_dot);

// Whether int8-weight products over many rows (kernels/gemm_q8.h, from kQ8FmaMinRows rows) on the
// AVX2 kernels run on f32 FMAs over the int8 values widened to f32 rather than on vpmaddubsw /
// vpmaddwd. Both give the exact integer block sums (x86/gemm_q8_avx2.cpp), so the same bits; only
// speed differs. AMD family 17h (Zen 1, Zen+, Zen 2) multiplies vector integers on one pipe and
// runs FMAs on two, so its int8 kernel trails the f32 GEMM (bench/README.md). Other CPUs keep the
// int8 kernel: their published
// tables give vector integer multiplies two pipes (Zen 3, Intel) or VNNI, but that is not
// measured here; `qvl-bench-kernels --benchmark_filter=gemm_q8/.*/avx2` compares both kernels on
// any AVX2 CPU. A pure function of the CPU.
bool q8_fma_beats_int8(bool cpu_is_amd, int cpu_family);
// This process's policy: q8_fma_beats_int8() of this CPU unless overridden (tests and benchmarks
// reach both kernels on any AVX2 CPU). Thread-safe.
bool q8_fma_for_gemm();
void set_q8_fma_for_gemm(bool use_fma);

// Every tier, lowest first (tests iterate over it and skip the unsupported ones visibly).
std::vector<Isa> all_isas();

}  // namespace qvl::kernels
