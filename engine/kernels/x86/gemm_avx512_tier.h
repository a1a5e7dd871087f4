// What the AVX-512 f32 and AVX512_BF16 GEMM tiers (x86/gemm_avx512.cpp,
// x86/gemm_avx512bf16.cpp) share around their micro-kernels, which stay apart: the epilogue both
// run on a finished slab, and the start of a panel-stream chunk. In an anonymous namespace, so
// that each tier's translation unit keeps its own copy (a class's inline members are otherwise
// shared at link time). Included only from those two files.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "kernels/gemm_internal.h"

namespace qvl::kernels::x86 {
namespace {

// The epilogue of both tiers' kernel and panel-stream traits (gemm_driver.h and
// gemm_panel_stream.h have the contract): they derive from this.
struct EpilogueAvx512 {
    static void epilogue(const GemmArgs& p, const float* acc, const float* acc2, std::ptrdiff_t ld,
                         int m0, int m1, int n0, int n1) {
        detail::gemm_epilogue_avx512(p, acc, acc2, ld, m0, m1, n0, n1);
    }
};

// The R x G accumulators of a panel-stream chunk at its start: zero for the first chunk of k,
// else the sums so far, c[r][g] from acc + r·ld_acc + 16·g (store_acc16's layout).
template <int R, int G>
[[gnu::always_inline]] inline void load_acc16(__m512 (&c)[R][G], bool first, const float* acc,
                                              std::ptrdiff_t ld_acc) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            c[r][g] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + r * ld_acc + g * 16);
        }
    }
}

}  // namespace
}  // namespace qvl::kernels::x86
