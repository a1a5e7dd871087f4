// What the CPU and the OS support, read once with CPUID + XGETBV (an instruction set only
// counts if the OS saves its registers).
#pragma once

namespace qvl::base {

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512_bf16 = false;
    bool avx512_vnni = false;
    bool intel = false;  // CPUID vendor "GenuineIntel" (some instruction costs differ by vendor)
    bool amd = false;    // CPUID vendor "AuthenticAMD"
    int family = 0;  // CPUID family, extended family included (AMD Zen 1/2: 0x17, Zen 3/4: 0x19)
    int physical_cores = 1;  // best effort; at least 1
};

// Detected once, on first call; thread-safe.
const CpuFeatures& cpu_features();

}  // namespace qvl::base
