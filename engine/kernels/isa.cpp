#include "kernels/isa.h"

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

Isa best_isa() {
    static const Isa isa = detect_best();
    return isa;
}

Isa resolve_isa(Isa requested) { return int(requested) > int(best_isa()) ? best_isa() : requested; }

}  // namespace qvl::kernels
