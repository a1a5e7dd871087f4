#include "base/cpu_features.h"

#include <cpuid.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace qvl::base {
namespace {

std::uint64_t read_xcr0() {
    std::uint32_t eax = 0, edx = 0;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (std::uint64_t(edx) << 32) | eax;
}

// Counts distinct (physical id, core id) pairs in /proc/cpuinfo; falls back to the number of
// online logical CPUs.
int count_physical_cores() {
    std::ifstream in("/proc/cpuinfo");
    std::set<std::pair<int, int>> cores;
    int physical = 0;
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
        const std::string value = line.substr(colon + 1);
        try {
            if (key == "physical id") physical = std::stoi(value);
            if (key == "core id") cores.insert({physical, std::stoi(value)});
        } catch (...) {
            // Malformed /proc/cpuinfo: ignore the line.
        }
    }
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cores.empty() ? int(online) : int(cores.size());
    return n > 0 ? n : 1;
}

CpuFeatures detect() {
    CpuFeatures f;
    unsigned eax, ebx, ecx, edx;
    if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) {
        // "GenuineIntel" in ebx, edx, ecx order.
        f.intel = ebx == 0x756e6547u && edx == 0x49656e69u && ecx == 0x6c65746eu;
        // "AuthenticAMD".
        f.amd = ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u;
    }
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
    f.family = int((eax >> 8) & 0xfu);
    if (f.family == 0xf) f.family += int((eax >> 20) & 0xffu);
    const bool osxsave = ecx & (1u << 27);
    const bool fma = ecx & (1u << 12);
    const bool f16c = ecx & (1u << 29);
    const bool avx = ecx & (1u << 28);
    const std::uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    const bool os_ymm = (xcr0 & 0x6) == 0x6;
    const bool os_zmm = (xcr0 & 0xe6) == 0xe6;
    f.physical_cores = count_physical_cores();
    if (!avx || !os_ymm) return f;
    unsigned max_leaf = __get_cpuid_max(0, nullptr);
    if (max_leaf < 7) return f;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    f.avx2 = ebx & (1u << 5);
    f.fma = fma;
    f.f16c = f16c;
    if (os_zmm) {
        f.avx512f = ebx & (1u << 16);
        f.avx512dq = ebx & (1u << 17);
        f.avx512bw = ebx & (1u << 30);
        f.avx512vl = ebx & (1u << 31);
        f.avx512_vnni = ecx & (1u << 11);
        unsigned a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        f.avx512_bf16 = a1 & (1u << 5);
    }
    return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

}  // namespace qvl::base
