// The BLIS-style blocking loops shared by the SIMD GEMM tiers, as templates on a kernel traits
// type K defined in each ISA's translation unit (so every instantiation is a distinct symbol: no
// ODR clash between ISA flags). Included only from kernels/x86/gemm_*.cpp.
//
// K provides:
//   using Packed;                        packed element (float, or uint32_t = bf16 pair)
//   static constexpr int kMR, kNR, kKC, kMC, kNC;   register tile and cache blocks (kKC in k)
//   static int packed_k(int kc);         packed elements per row/column for kc values of k
//   static void pack_a(const GemmProblem&, int i0, int rows, int p0, int kc, Packed* out);
//       rows [i0, i0 + rows) x k [p0, p0 + kc) into ceil(rows / kMR) panels of
//       [packed_k(kc)][kMR], rows past `rows` zero
//   static void pack_b(const GemmProblem&, const void* w, int j0, int cols, int p0, int kc,
//                      Packed* out);     weight rows [j0, j0 + cols) likewise, [packed_k][kNR]
//   static void ukernel(int ks, const Packed* a, const Packed* b, float* c, ptrdiff_t ldc,
//                       bool accumulate);  c[kMR][kNR] (+)= a-panel x b-panel, full tile
//   static void epilogue(const GemmProblem&, const float* acc, const float* acc2, ptrdiff_t ld,
//                        int m0, int m1, int n0, int n1);
//
// Every output element is a single chain of f32 FMAs over k in increasing order (stored and
// reloaded between k blocks, which is exact), so the result does not depend on the tile
// boundaries: any split over rows or columns gives the same bits.
#pragma once

#include <algorithm>
#include <cstddef>

#include "kernels/gemm_internal.h"

namespace qvl::kernels::detail {

template <class K>
void gemm_tile_blocked(const GemmProblem& p, int m0, int m1, int n0, int n1) {
    using Packed = typename K::Packed;
    constexpr int kMR = K::kMR, kNR = K::kNR, kKC = K::kKC, kMC = K::kMC, kNC = K::kNC;
    // Rows handled per pass: the accumulator slab (rows x kNC floats) stays in L2/L3.
    constexpr int kRowChunk = kMC * 9;
    const bool gated = p.w2 != nullptr;
    const std::size_t ks_max = std::size_t(K::packed_k(std::min(kKC, p.k)));
    auto* pa = static_cast<Packed*>(
        gemm_scratch(kScratchA, sizeof(Packed) * ks_max * std::size_t(kMC + kMR)));
    auto* pb = static_cast<Packed*>(
        gemm_scratch(kScratchB, sizeof(Packed) * ks_max * std::size_t(kNC + kNR)));
    Packed* pb2 = gated ? static_cast<Packed*>(gemm_scratch(
                              kScratchB2, sizeof(Packed) * ks_max * std::size_t(kNC + kNR)))
                        : nullptr;
    for (int r0 = m0; r0 < m1; r0 += kRowChunk) {
        const int r1 = std::min(m1, r0 + kRowChunk);
        const int rows_pad = (r1 - r0 + kMR - 1) / kMR * kMR;
        for (int jc = n0; jc < n1; jc += kNC) {
            const int ncols = std::min(kNC, n1 - jc);
            const int cols_pad = (ncols + kNR - 1) / kNR * kNR;
            const std::ptrdiff_t ld = cols_pad;
            const std::size_t acc_bytes = sizeof(float) * std::size_t(rows_pad) * cols_pad;
            auto* acc = static_cast<float*>(gemm_scratch(kScratchC, acc_bytes));
            float* acc2 =
                gated ? static_cast<float*>(gemm_scratch(kScratchC2, acc_bytes)) : nullptr;
            for (int pc = 0; pc < p.k; pc += kKC) {
                const int kc = std::min(kKC, p.k - pc);
                const int ks = K::packed_k(kc);
                const bool accumulate = pc > 0;
                K::pack_b(p, p.w, jc, ncols, pc, kc, pb);
                if (gated) K::pack_b(p, p.w2, jc, ncols, pc, kc, pb2);
                for (int ic = r0; ic < r1; ic += kMC) {
                    const int mrows = std::min(kMC, r1 - ic);
                    const int mrows_pad = (mrows + kMR - 1) / kMR * kMR;
                    K::pack_a(p, ic, mrows, pc, kc, pa);
                    for (int jr = 0; jr < cols_pad; jr += kNR) {
                        const Packed* b = pb + std::ptrdiff_t(jr) * ks;
                        const Packed* b2 = gated ? pb2 + std::ptrdiff_t(jr) * ks : nullptr;
                        for (int ir = 0; ir < mrows_pad; ir += kMR) {
                            const std::ptrdiff_t at = std::ptrdiff_t(ic - r0 + ir) * ld + jr;
                            const Packed* a = pa + std::ptrdiff_t(ir) * ks;
                            K::ukernel(ks, a, b, acc + at, ld, accumulate);
                            if (gated) K::ukernel(ks, a, b2, acc2 + at, ld, accumulate);
                        }
                    }
                }
            }
            K::epilogue(p, acc, acc2, ld, r0, r1, jc, jc + ncols);
        }
    }
}

}  // namespace qvl::kernels::detail
