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
// bf16 bits), into the cache level kHint names (_MM_HINT_T0: L1, _MM_HINT_T1: L2).
template <int kHint, class E>
inline void prefetch_rows_to(const E* m, std::ptrdiff_t stride, int r0, int r1, int hi, int n) {
    for (int r = r0; r < std::min(r1, hi); ++r) {
        for (int c = 0; c < n; c += 64 / int(sizeof(E))) {
            const char* line = reinterpret_cast<const char*>(m + std::ptrdiff_t(r) * stride + c);
            // The hint must be a literal for both compilers' _mm_prefetch.
            if constexpr (kHint == _MM_HINT_T0) {
                _mm_prefetch(line, _MM_HINT_T0);
            } else {
                static_assert(kHint == _MM_HINT_T1);
                _mm_prefetch(line, _MM_HINT_T1);
            }
        }
    }
}

// The same into L1.
template <class E>
inline void prefetch_rows(const E* m, std::ptrdiff_t stride, int r0, int r1, int hi, int n) {
    prefetch_rows_to<_MM_HINT_T0>(m, stride, r0, r1, hi, n);
}

// The decode kernels' read-ahead: the same into L2. A decode row streams its K and V rows from
// DRAM once; L1 prefetches of the next 16 keys held the L1 miss buffers the kernel's own loads
// needed and came too late to hide DRAM latency. Measured on Zen 4 (kernel bench
// attention/decode_kvbf16, 1 thread, 28 layers' caches cycled, three alternated runs): 32 keys
// ahead into L2 read 12.3-13.6 GB/s at ctx 1024/4096 against 6.9-11.4 for 16 ahead into L1; 64
// or 128 ahead were no better, none at all worse (7-9).
template <class E>
inline void prefetch_rows_l2(const E* m, std::ptrdiff_t stride, int r0, int r1, int hi, int n) {
    prefetch_rows_to<_MM_HINT_T1>(m, stride, r0, r1, hi, n);
}

// Keys a decode row's K and V reads are prefetched ahead (prefetch_rows_l2).
inline constexpr int kDecodePrefetchKeys = 32;

}  // namespace
}  // namespace qvl::kernels::x86
