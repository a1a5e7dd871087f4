// Links qvl::engine from an installed prefix and uses its public API.
#include <qvl/base/cpu_features.h>
#include <qvl/base/version.h>

#include <cstdio>

int main() {
    const qvl::base::CpuFeatures& cpu = qvl::base::cpu_features();
    std::printf("qvl %s, avx2=%d avx512f=%d\n", qvl::base::version(), cpu.avx2, cpu.avx512f);
    return 0;
}
