// Software prefetch of matrix rows that lie a row stride apart (attention's K, V and query rows:
// 12 KiB apart in the vision tower's fused qkv, a page each), which the hardware prefetchers do
// not follow. Shared by the AVX2 and AVX-512 attention kernels.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstddef>

namespace qvl::kernels::x86 {
// In an anonymous namespace: each ISA's translation unit keeps its own copy (style.md B.5).
namespace {

// Prefetches rows [r0, min(r1, hi)) of a [row][stride] matrix, n elements E each (float or
// bf16 bits), into L1.
template <class E>
inline void prefetch_rows(const E* m, std::ptrdiff_t stride, int r0, int r1, int hi, int n) {
    for (int r = r0; r < std::min(r1, hi); ++r) {
        for (int c = 0; c < n; c += 64 / int(sizeof(E))) {
            _mm_prefetch(reinterpret_cast<const char*>(m + std::ptrdiff_t(r) * stride + c),
                         _MM_HINT_T0);
        }
    }
}

}  // namespace
}  // namespace qvl::kernels::x86
