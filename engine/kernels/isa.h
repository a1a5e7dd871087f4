// Instruction-set tiers and the one-time choice among them. ISA-specific code lives in files
// named *_avx2.cpp / *_avx512.cpp / *_avx512bf16.cpp, built with those flags only; each kernel
// family exposes a table per Isa, and callers pick the table once (best_isa()).
#pragma once

#include <string_view>
#include <vector>

namespace qvl::kernels {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };

const char* isa_name(Isa isa);  // "scalar", "avx2", "avx512", "avx512bf16"
bool parse_isa(std::string_view name, Isa* out);

// Whether this CPU (and OS) can run code of that tier.
bool isa_supported(Isa isa);

// The best tier this CPU supports. Decided once, on first call.
Isa best_isa();

// A tier asked for by the user (an option), lowered to best_isa() when the CPU cannot run it:
// a request may lower the tier, never raise it.
Isa clamp_to_supported(Isa requested);

// Every tier, lowest first (tests iterate over it and skip the unsupported ones visibly).
std::vector<Isa> all_isas();

}  // namespace qvl::kernels
