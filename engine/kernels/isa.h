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

// Every tier, lowest first (tests iterate over it and skip the unsupported ones visibly).
std::vector<Isa> all_isas();

}  // namespace qvl::kernels
