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
// same products, f32 sums). AMD Zen 4/5 run one vdpbf16ps per FMA slot, twice the FLOPs of an
// FMA; the Intel Xeons seen here (Sapphire/Emerald Rapids class, no AMX in the VM) run it at
// 0.45-0.6x the FLOP rate of FMAs (peak loops 68-87 vs 126-179 GFLOP/s per core), so the FMA
// kernel is 1.7x faster there. A pure function of the CPU, so results never change between runs
// on one machine. GEMV (decode, m <= 32) is bandwidth-bound and keeps vdpbf16ps everywhere.
bool bf16_dot_beats_fma(bool cpu_has_avx512_bf16, bool cpu_is_intel);
// This process's policy: bf16_dot_beats_fma() of this CPU unless overridden (tests and
// benchmarks use the override to reach each kernel on any CPU). Thread-safe.
bool bf16_dot_for_gemm();
void set_bf16_dot_for_gemm(bool use_bf16_dot);

// Every tier, lowest first (tests iterate over it and skip the unsupported ones visibly).
std::vector<Isa> all_isas();

}  // namespace qvl::kernels
