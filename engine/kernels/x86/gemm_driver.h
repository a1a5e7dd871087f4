// The BLIS-style blocking loops shared by the SIMD GEMM tiers, as templates on a kernel traits
// type K defined in each ISA's translation unit (so every instantiation is a distinct symbol: no
// ODR clash between ISA flags). Included only from kernels/x86/gemm_*.cpp.
//
// K provides:
//   using Packed;                        packed element (float, or uint32_t = bf16 pair)
//   static constexpr int kMR, kNR, kKC, kMC, kNC;   register tile and cache blocks (kKC in k)
//   static int packed_k(int kc);         packed elements per row/column for kc values of k
//   static void pack_a(const GemmArgs&, int i0, int rows, int p0, int kc, Packed* out);
//       rows [i0, i0 + rows) x k [p0, p0 + kc) into ceil(rows / kMR) panels of
//       [packed_k(kc)][kMR], rows past `rows` zero
//   static void pack_b(const GemmArgs&, const void* w, int j0, int cols, int p0, int kc,
//                      Packed* out);     weight rows [j0, j0 + cols) likewise, [packed_k][kNR]
//   template <int R> static void ukernel(int ks, const Packed* a, const Packed* b, float* c,
//                       ptrdiff_t ldc, bool accumulate);  c[R][kNR] (+)= rows [0, R) of the
//                       a-panel x b-panel (R <= kMR; the a-panel keeps its kMR stride)
//   static void epilogue(const GemmArgs&, const float* acc, const float* acc2, ptrdiff_t ld,
//                        int m0, int m1, int n0, int n1);
// and optionally, to read load-time weight panels in place (kReadsPanels below):
//   static const Packed* panel_b(const GemmArgs&, const void* w, int j0, int p0);   the kNR
//                       columns from j0 at k p0 in the weights' own layout, or null if w is not
//                       in it
//   static std::ptrdiff_t panel_b_half(const GemmArgs&);   elements from a tile's first 16
//                       columns to its next 16
//   template <int R> static void ukernel_panels(int ks, const Packed* a, const Packed* b,
//                       ptrdiff_t b_half, float* c, ptrdiff_t ldc, bool accumulate);
//
// Loops: rows in passes (A of the pass packed for all of k once), columns in kNC blocks, k in kKC
// blocks (the block's B panel packed once, kept in L2; or, for a tier that can, read in place
// from load-time weight panels: K::panel_b below), then kMC-row blocks of A x kNR-column
// micro-panels of B x kMR-row panels: one register tile each, accumulated in a slab of
// rows x kNC floats (L2); the epilogue runs on the slab after the last k block. The micro-kernel
// streams its A and B panels from L2 (sequential, so prefetched); with kKC covering all of k for
// most shapes the slab is written once and never reloaded.
//
// Every output element is a single chain of f32 FMAs over k in increasing order (stored and
// reloaded between k blocks, which is exact), so the result does not depend on the tile
// boundaries: any split over rows or columns gives the same bits.
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "kernels/gemm_internal.h"
#include "kernels/x86/static_count.h"

namespace qvl::kernels::detail {

template <int kRows, int kCols>
inline void prefetch_tile(const float* c, std::ptrdiff_t ld) {
    for (int r = 0; r < kRows; ++r) {
        for (int j = 0; j < kCols; j += 16) __builtin_prefetch(c + r * ld + j, 1, 3);
    }
}

// Whether tier K reads load-time weight panels in place (K::panel_b, K::panel_b_half,
// K::ukernel_panels) instead of packing them into B panels.
template <class K>
inline constexpr bool kReadsPanels = requires(const GemmArgs& a) {
    K::panel_b(a, a.w, 0, 0);
    K::panel_b_half(a);
};

// A packed once for every task of a problem (GemmArgs::packed_a, kernels/gemm.h): for each k
// block pc (kKC values of k), the row panels of all of m, in order, at
// packed_a + round_up(m, kMR) * packed_k(pc); so row r (a multiple of kMR) of block pc starts at
// that + r * packed_k(kc). The same panels K::pack_a writes for one task's pass.
// Packed elements per row for all of k: k blocks start at multiples of kKC, so block pc starts
// at packed_k(pc) in a row panel's concatenation of blocks.
template <class K>
std::size_t packed_k_all(int k) {
    const int last_pc = (k - 1) / K::kKC * K::kKC;
    return std::size_t(K::packed_k(last_pc) + K::packed_k(k - last_pc));
}

// rows rounded up to whole row panels.
template <class K>
std::ptrdiff_t padded_rows(int rows) {
    return std::ptrdiff_t(rows + K::kMR - 1) / K::kMR * K::kMR;
}

template <class K>
std::size_t packed_a_bytes(const GemmArgs& p) {
    return sizeof(typename K::Packed) * std::size_t(padded_rows<K>(p.m)) * packed_k_all<K>(p.k);
}

// Rows [m0, m1) of that layout (m0 a multiple of kMR; m1 too unless it is m).
template <class K>
void pack_a_shared(const GemmArgs& p, int m0, int m1) {
    using Packed = typename K::Packed;
    auto* out = static_cast<Packed*>(p.packed_a);
    const std::ptrdiff_t rows_pad = padded_rows<K>(p.m);
    for (int pc = 0; pc < p.k; pc += K::kKC) {
        const int kc = std::min(K::kKC, p.k - pc);
        K::pack_a(p, m0, m1 - m0, pc, kc,
                  out + rows_pad * K::packed_k(pc) + std::ptrdiff_t(m0) * K::packed_k(kc));
    }
}

// Rows per pass: A for all of k is packed once per pass (kept in L3 and reused by every column
// block instead of re-packed for each), and the pass's accumulator slab (rows x kNC floats) is
// swept once per k block. Two row blocks per pass keep the slab in L2 beside the B block (nine
// were slower on the vision products and long prompts, most where k spans several blocks and
// the slab is reloaded: bench/README.md). The pass's packed A is also capped at 8 MiB (L3): it
// binds only for k beyond ~8700 (f32 panels) or ~18700 (bf16 pairs), longer than any of the
// model's.
template <class K>
int blocked_pass_rows(std::size_t k_packed) {
    constexpr std::size_t kAPassBytes = std::size_t(8) << 20;
    constexpr int kMaxPassRows = K::kMC * 2;
    return std::clamp(int(kAPassBytes / (sizeof(typename K::Packed) * k_packed)) / K::kMC * K::kMC,
                      K::kMC, kMaxPassRows);
}

// One k block of one column block of a pass: where its A rows, its B (packed, or read in place
// from load-time panels: direct) and the pass's accumulator slab are.
template <class K>
struct BlockedStep {
    using Packed = typename K::Packed;
    const Packed* a_blk = nullptr;  // row r0 of the k block (row panels of ks values per row)
    const Packed *b = nullptr, *b2 = nullptr;            // packed B (b2: the gate's up weights)
    const Packed *direct = nullptr, *direct2 = nullptr;  // or B in place (null: packed)
    std::ptrdiff_t panel_len = 0;
    float *acc = nullptr, *acc2 = nullptr;  // the slab, ld floats per row
    std::ptrdiff_t ld = 0, cols_pad = 0;
    int r0 = 0, r1 = 0, ks = 0;
    bool accumulate = false, gated = false;
};

// The next tile's accumulators (the slab is in L2 or L3): asked for now, they arrive while the
// tile at (ic, jr, ir) computes.
template <class K>
[[gnu::always_inline]] inline void prefetch_next_tile(const BlockedStep<K>& s, int ic, int jr,
                                                      int ir, std::ptrdiff_t at, int mrows_pad) {
    constexpr int kMR = K::kMR, kNR = K::kNR, kMC = K::kMC;
    std::ptrdiff_t nat = -1;
    if (ir + kMR < mrows_pad) {
        nat = at + kMR * s.ld;
    } else if (jr + kNR < s.cols_pad) {
        nat = std::ptrdiff_t(ic - s.r0) * s.ld + jr + kNR;
    } else if (ic + kMC < s.r1) {
        nat = std::ptrdiff_t(ic + kMC - s.r0) * s.ld;
    }
    if (nat >= 0) {
        prefetch_tile<kMR, kNR>(s.acc + nat, s.ld);
        if (s.gated) prefetch_tile<kMR, kNR>(s.acc2 + nat, s.ld);
    }
}

// The register tile of `rows` rows (the last row panel of a block skips its zero padding rows:
// 212 rows in 14-row panels would otherwise compute 224) from a and B tile b (b2), at slab
// offset `at`.
template <class K>
[[gnu::always_inline]] inline void blocked_tile(const BlockedStep<K>& s, int rows,
                                                const typename K::Packed* a,
                                                const typename K::Packed* b,
                                                const typename K::Packed* b2, std::ptrdiff_t at) {
    x86::with_static_count<K::kMR>(rows, [&](auto r) {
        constexpr int R = decltype(r)::value;
        if constexpr (kReadsPanels<K>) {
            if (s.direct != nullptr) {
                K::template ukernel_panels<R>(s.ks, a, b, s.panel_len, s.acc + at, s.ld,
                                              s.accumulate);
                if (s.gated) {
                    K::template ukernel_panels<R>(s.ks, a, b2, s.panel_len, s.acc2 + at, s.ld,
                                                  s.accumulate);
                }
                return;
            }
        }
        K::template ukernel<R>(s.ks, a, b, s.acc + at, s.ld, s.accumulate);
        if (s.gated) K::template ukernel<R>(s.ks, a, b2, s.acc2 + at, s.ld, s.accumulate);
    });
}

// Every tile of one k block: kMC-row blocks of A x kNR-column micro-panels of B x kMR-row
// panels.
template <class K>
[[gnu::always_inline]] inline void blocked_step(const BlockedStep<K>& s) {
    using Packed = typename K::Packed;
    constexpr int kMR = K::kMR, kNR = K::kNR, kMC = K::kMC;
    for (int ic = s.r0; ic < s.r1; ic += kMC) {
        const int mrows = std::min(kMC, s.r1 - ic);
        const int mrows_pad = (mrows + kMR - 1) / kMR * kMR;
        for (int jr = 0; jr < s.cols_pad; jr += kNR) {
            // Tile jr: panel jr / 16 of the weights, or the jr-th packed panel.
            const Packed* b = s.direct != nullptr ? s.direct + jr / 16 * s.panel_len
                                                  : s.b + std::ptrdiff_t(jr) * s.ks;
            const Packed* b2 = !s.gated              ? nullptr
                               : s.direct != nullptr ? s.direct2 + jr / 16 * s.panel_len
                                                     : s.b2 + std::ptrdiff_t(jr) * s.ks;
            for (int ir = 0; ir < mrows_pad; ir += kMR) {
                const std::ptrdiff_t at = std::ptrdiff_t(ic - s.r0 + ir) * s.ld + jr;
                const Packed* a = s.a_blk + std::ptrdiff_t(ic - s.r0 + ir) * s.ks;
                if (s.accumulate) prefetch_next_tile(s, ic, jr, ir, at, mrows_pad);
                blocked_tile(s, mrows - ir, a, b, b2, at);
            }
        }
    }
}

template <class K>
void gemm_tile_blocked(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    using Packed = typename K::Packed;
    constexpr int kMR = K::kMR, kNR = K::kNR, kKC = K::kKC, kMC = K::kMC, kNC = K::kNC;
    static_assert(kMC % kMR == 0 && kNC % kNR == 0 && kKC % 2 == 0);
    const bool gated = p.w_up != nullptr;
    const std::size_t k_packed = packed_k_all<K>(p.k);
    const int pass_rows = blocked_pass_rows<K>(k_packed);
    // A packed by the caller for all tasks (packed_a_bytes above), or by this task, a pass at a
    // time, into its scratch.
    const bool shared_a = p.packed_a != nullptr;
    const std::ptrdiff_t shared_rows_pad = padded_rows<K>(p.m);
    auto* pa = shared_a ? static_cast<Packed*>(p.packed_a)
                        : static_cast<Packed*>(thread_scratch(
                              kScratchA, sizeof(Packed) * k_packed *
                                             std::size_t(std::min(pass_rows, m1 - m0) + kMR)));
    // B of one k block and one column block (kNC columns).
    const std::size_t b_elems = std::size_t(K::packed_k(std::min(kKC, p.k))) * kNC;
    BlockedStep<K> s{.gated = gated};
    auto* pb = static_cast<Packed*>(thread_scratch(kScratchB, sizeof(Packed) * b_elems));
    Packed* pb2 = gated ? static_cast<Packed*>(thread_scratch(kScratchB2, sizeof(Packed) * b_elems))
                        : nullptr;
    for (int r0 = m0; r0 < m1; r0 += pass_rows) {
        const int r1 = std::min(m1, r0 + pass_rows);
        const std::ptrdiff_t rows_pad = padded_rows<K>(r1 - r0);
        for (int pc = 0; pc < p.k && !shared_a; pc += kKC) {
            const int kc = std::min(kKC, p.k - pc);
            K::pack_a(p, r0, r1 - r0, pc, kc, pa + rows_pad * K::packed_k(pc));
        }
        for (int jc = n0; jc < n1; jc += kNC) {
            const int ncols = std::min(kNC, n1 - jc);
            s.r0 = r0;
            s.r1 = r1;
            s.cols_pad = (ncols + kNR - 1) / kNR * kNR;
            s.ld = s.cols_pad;
            const std::size_t acc_bytes = sizeof(float) * std::size_t(rows_pad) * s.cols_pad;
            s.acc = static_cast<float*>(thread_scratch(kScratchC, acc_bytes));
            s.acc2 = gated ? static_cast<float*>(thread_scratch(kScratchC2, acc_bytes)) : nullptr;
            for (int pc = 0; pc < p.k; pc += kKC) {
                const int kc = std::min(kKC, p.k - pc);
                s.ks = K::packed_k(kc);
                s.accumulate = pc > 0;
                // B of the block: read in place from load-time panels when the tier can and the
                // block is whole tiles, else packed (kNR-column panels of ks pairs).
                s.direct = s.direct2 = nullptr;
                if constexpr (kReadsPanels<K>) {
                    if (ncols % kNR == 0) {
                        s.direct = K::panel_b(p, p.w, jc, pc);
                        s.direct2 = gated ? K::panel_b(p, p.w_up, jc, pc) : nullptr;
                        s.panel_len = K::panel_b_half(p);
                    }
                }
                if (s.direct == nullptr) {
                    K::pack_b(p, p.w, jc, ncols, pc, kc, pb);
                    if (gated) K::pack_b(p, p.w_up, jc, ncols, pc, kc, pb2);
                }
                s.b = pb;
                s.b2 = pb2;
                s.a_blk = shared_a
                              ? pa + shared_rows_pad * K::packed_k(pc) + std::ptrdiff_t(r0) * s.ks
                              : pa + rows_pad * K::packed_k(pc);
                blocked_step(s);
            }
            // The slab (rows x kNC floats, in L2) row by row: contiguous output rows.
            K::epilogue(p, s.acc, s.acc2, s.ld, r0, r1, jc, jc + ncols);
        }
    }
}

// Small m (decode steps, short chunks) on weights that are not load-time panels: the blocked loop
// on Stream<MR>, a tier's small-m variant of its kernel (the same chain of operations per output
// element, so rows are bit-identical whatever MR), with the smallest register tile that covers m
// (no zero rows packed or multiplied): 1, 2, 4 or kWideMR rows.
template <template <int> class Stream, int kWideMR>
void gemm_tile_stream(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    const int m = m1 - m0;
    if (m <= 1) return gemm_tile_blocked<Stream<1>>(p, m0, m1, n0, n1);
    if (m <= 2) return gemm_tile_blocked<Stream<2>>(p, m0, m1, n0, n1);
    if (m <= 4) return gemm_tile_blocked<Stream<4>>(p, m0, m1, n0, n1);
    gemm_tile_blocked<Stream<kWideMR>>(p, m0, m1, n0, n1);
}

}  // namespace qvl::kernels::detail
