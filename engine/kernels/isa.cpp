#include "kernels/isa.h"

#include <atomic>

#include "base/cpu_features.h"

namespace qvl::kernels {

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::kScalar:
            return "scalar";
        case Isa::kAvx2:
            return "avx2";
        case Isa::kAvx512:
            return "avx512";
        case Isa::kAvx512Bf16:
            return "avx512bf16";
    }
    return "unknown";
}

bool parse_isa(std::string_view name, Isa* out) {
    for (Isa isa : all_isas()) {
        if (name == isa_name(isa)) {
            *out = isa;
            return true;
        }
    }
    return false;
}

bool isa_supported(Isa isa) {
    const base::CpuFeatures& f = base::cpu_features();
    const bool avx2 = f.avx2 && f.fma && f.f16c;
    const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
    switch (isa) {
        case Isa::kScalar:
            return true;
        case Isa::kAvx2:
            return avx2;
        case Isa::kAvx512:
            return avx512;
        case Isa::kAvx512Bf16:
            return avx512 && f.avx512_bf16 && f.avx512_vnni;
    }
    return false;
}

std::vector<Isa> all_isas() { return {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16}; }

namespace {
Isa detect_best() {
    Isa best = Isa::kScalar;
    for (Isa isa : all_isas()) {
        if (isa_supported(isa)) best = isa;
    }
    return best;
}

}  // namespace

bool bf16_dot_beats_fma(bool cpu_has_avx512_bf16, bool cpu_is_intel) {
    return cpu_has_avx512_bf16 && !cpu_is_intel;
}

namespace {
// -1: not decided yet; 0/1: the policy.
std::atomic<int> g_bf16_dot_for_gemm{-1};
}  // namespace

bool bf16_dot_for_gemm() {
    int v = g_bf16_dot_for_gemm.load(std::memory_order_relaxed);
    if (v < 0) {
        const base::CpuFeatures& f = base::cpu_features();
        v = bf16_dot_beats_fma(isa_supported(Isa::kAvx512Bf16), f.intel) ? 1 : 0;
        int expected = -1;
        if (!g_bf16_dot_for_gemm.compare_exchange_strong(expected, v)) v = expected;
    }
    return v != 0;
}

void set_bf16_dot_for_gemm(bool use_bf16_dot) { g_bf16_dot_for_gemm.store(use_bf16_dot ? 1 : 0); }

bool q8_fma_beats_int8(bool cpu_is_amd, int cpu_family) { return cpu_is_amd && cpu_family == 0x17; }

namespace {
std::atomic<int> g_q8_fma_for_gemm{-1};  // -1: not decided yet
}  // namespace

bool q8_fma_for_gemm() {
    int v = g_q8_fma_for_gemm.load(std::memory_order_relaxed);
    if (v < 0) {
        const base::CpuFeatures& f = base::cpu_features();
        v = q8_fma_beats_int8(f.amd, f.family) ? 1 : 0;
        int expected = -1;
        if (!g_q8_fma_for_gemm.compare_exchange_strong(expected, v)) v = expected;
    }
    return v != 0;
}

void set_q8_fma_for_gemm(bool use_fma) { g_q8_fma_for_gemm.store(use_fma ? 1 : 0); }

Isa best_isa() {
    static const Isa isa = detect_best();
    return isa;
}

Isa resolve_isa(Isa requested) { return int(requested) > int(best_isa()) ? best_isa() : requested; }

}  // namespace qvl::kernels
