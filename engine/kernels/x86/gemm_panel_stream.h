// The small-m path (m <= kGemvMaxM: decode steps, short prefill chunks) on load-time weight
// panels (kernels/weight_panels.h), shared by the SIMD tiers as a template on a traits type S
// defined in each ISA's translation unit (distinct symbols per ISA, as gemm_driver.h).
//
// The weights stream once, straight from the panels (no packing copy): G panels (16 outputs
// each) at a time, k in chunks small enough to stay in L1 while every group of up to S::kRows
// activation rows runs over them. Sums live in a slab between chunks (stored and reloaded, which
// is exact), and the tier's GEMM epilogue runs on the slab.
//
// Each output element is the same chain of operations as in the tier's packed micro-kernel (one
// f32 FMA per k in increasing order, or one vdpbf16ps per k pair), so a row's result is
// bit-identical to what the large-m path gives it: the runtime's batch invariance and exact
// prefix reuse rest on this (tests/kernels/gemm_row_invariance_test.cpp).
//
// S provides:
//   using AElem;                          activation element the chain reads (float, or a uint32
//                                         bf16 pair)
//   static constexpr int kRows;           activation rows per pass over a chunk (<= 4)
//   static constexpr int kPanels;         panels per pass (independent chains per row, <= 4)
//   static std::ptrdiff_t a_len(int k);   AElem per prepared row
//   static void prepare_a(const GemmArgs&, int row, AElem* out);   row of A as the chain reads it
//                                         (bf16-rounded for kBF16 precision), a_len(k) elements
//   template <int R, int G> static void chunk(const AElem* a, std::ptrdiff_t lda,
//       const std::uint32_t* w, std::ptrdiff_t panel_stride, std::ptrdiff_t t0, std::ptrdiff_t t1,
//       bool odd_tail, bool first, float* acc, std::ptrdiff_t ld_acc);
//                                         acc[R][16 G] (+)= rows x panels over pairs [t0, t1);
//                                         odd_tail: the last pair holds only its even k
//   static void epilogue(const GemmArgs&, const float* acc, const float* acc2, std::ptrdiff_t ld,
//                        int m0, int m1, int n0, int n1);   the packed path's epilogue
// and, for weights as stored (gemm_tile_row_stream below):
//   static void rows_to_panel(const std::uint16_t* w, std::ptrdiff_t ldw, int live, int k,
//       std::ptrdiff_t t0, std::ptrdiff_t t1, std::ptrdiff_t ahead, std::uint32_t* out);
//                                         pairs [t0, t1) (t0 a multiple of 16) of the 16 bf16
//                                         rows from w (row stride ldw; rows from `live` on and k
//                                         from `k` on read as zero) as one panel:
//                                         out[(t - t0) * 16 + c] = pair t of row c; prefetches
//                                         into L2 each line read, `ahead` elements further on
//   template <int R, int G> static void row_group(const AElem* a, std::ptrdiff_t lda,
//       const std::uint16_t* w, std::ptrdiff_t ldw, int live, int k, float* acc,
//       std::ptrdiff_t ld_acc);           (AVX-512 tiers, gemm_tile_row_direct) acc[R][16 G] =
//                                         R rows x the 16 G bf16 rows from w (rows from `live`
//                                         on zero) over all of k, each output the chain above
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/gemm_internal.h"
#include "kernels/weight_panels.h"
#include "kernels/x86/gemm_driver.h"

namespace qvl::kernels::detail {

// Pairs per chunk: 4 panels x 64 pairs x 64 bytes = 16 KiB, in L1 while the row groups reuse it
// (twice that filled a 32 KiB L1 and the second row group read the chunk back from L2:
// bench/README.md, "Kernel design measurements").
inline constexpr std::ptrdiff_t kStreamChunkPairs = 64;

// How far ahead of its reads each panel's stream is prefetched, in pairs (one 64-byte line per
// pair and panel: 4 KiB ahead), and into L2, not L1. A decode step reads every weight once, so it
// is bound by how many cache lines are in flight; the hardware prefetchers ramp up anew at each
// panel and follow four interleaved streams less eagerly than one. Into L1 they held miss buffers
// the loads needed on AMD cores; into L2 both vendors' cores gained (bench/README.md, "Kernel
// design measurements"). Near a panel's end the prefetches run into the next panel's first lines
// (a few wasted ones per panel); past the buffer's end they are harmless (a prefetch never
// faults).
inline constexpr std::ptrdiff_t kStreamPrefetchPairs = 64;

// Prefetches pair t + kStreamPrefetchPairs of panels [0, G) into L2; call once per pair. (In an
// anonymous namespace: each ISA's translation unit keeps its own copy, style.md B.5.) Always
// inlined: GCC 12 counts a function of prefetches alone as free of side effects, and where a
// call to it survived early inlining (from inside another always_inline helper) it deleted the
// call, prefetches and all.
namespace {
template <int G>
[[gnu::always_inline]] inline void prefetch_panels(const std::uint32_t* w,
                                                   std::ptrdiff_t panel_stride, std::ptrdiff_t t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
        _mm_prefetch(reinterpret_cast<const char*>(w + g * panel_stride +
                                                   (t + kStreamPrefetchPairs) * kPanelOutputs),
                     _MM_HINT_T1);
    }
}
}  // namespace

template <class S, int G>
void panel_stream_rows(const typename S::AElem* a, std::ptrdiff_t lda, int rows,
                       const std::uint32_t* w, std::ptrdiff_t panel_stride, std::ptrdiff_t t0,
                       std::ptrdiff_t t1, bool odd_tail, bool first, float* acc,
                       std::ptrdiff_t ld_acc) {
    for (int r0 = 0; r0 < rows; r0 += S::kRows) {
        const typename S::AElem* ar = a + std::ptrdiff_t(r0) * lda;
        float* cr = acc + std::ptrdiff_t(r0) * ld_acc;
        switch (std::min(S::kRows, rows - r0)) {
            case 1:
                S::template chunk<1, G>(ar, lda, w, panel_stride, t0, t1, odd_tail, first, cr,
                                        ld_acc);
                break;
            case 2:
                S::template chunk<2, G>(ar, lda, w, panel_stride, t0, t1, odd_tail, first, cr,
                                        ld_acc);
                break;
            case 3:
                S::template chunk<3, G>(ar, lda, w, panel_stride, t0, t1, odd_tail, first, cr,
                                        ld_acc);
                break;
            default:
                S::template chunk<4, G>(ar, lda, w, panel_stride, t0, t1, odd_tail, first, cr,
                                        ld_acc);
                break;
        }
    }
}

// acc[rows][16 g] = A rows x panels [panel0, panel0 + g) of w over all of k.
template <class S>
void panel_stream_matrix(const typename S::AElem* a, std::ptrdiff_t lda, int rows, int k,
                         const std::uint32_t* w, std::ptrdiff_t pairs, int panel0, int g,
                         float* acc, std::ptrdiff_t ld_acc) {
    const std::ptrdiff_t panel_stride = pairs * kPanelOutputs;
    const std::uint32_t* wp = w + std::ptrdiff_t(panel0) * panel_stride;
    for (std::ptrdiff_t t0 = 0; t0 < pairs; t0 += kStreamChunkPairs) {
        const std::ptrdiff_t t1 = std::min(pairs, t0 + kStreamChunkPairs);
        const bool odd_tail = t1 == pairs && k % 2 != 0;
        const bool first = t0 == 0;
        switch (g) {
            case 1:
                panel_stream_rows<S, 1>(a, lda, rows, wp, panel_stride, t0, t1, odd_tail, first,
                                        acc, ld_acc);
                break;
            case 2:
                panel_stream_rows<S, 2>(a, lda, rows, wp, panel_stride, t0, t1, odd_tail, first,
                                        acc, ld_acc);
                break;
            case 3:
                panel_stream_rows<S, 3>(a, lda, rows, wp, panel_stride, t0, t1, odd_tail, first,
                                        acc, ld_acc);
                break;
            default:
                panel_stream_rows<S, 4>(a, lda, rows, wp, panel_stride, t0, t1, odd_tail, first,
                                        acc, ld_acc);
                break;
        }
    }
}

// Rows [m0, m1) of A as the chains read them (S::prepare_a), S::a_len(k) elements apart, in the
// calling thread's kScratchA.
template <class S>
typename S::AElem* prepared_rows(const GemmArgs& p, int m0, int m1) {
    using AElem = typename S::AElem;
    const std::ptrdiff_t lda = S::a_len(p.k);
    auto* a = static_cast<AElem*>(
        thread_scratch(kScratchA, sizeof(AElem) * std::size_t(m1 - m0) * std::size_t(lda)));
    for (int i = 0; i < m1 - m0; ++i) S::prepare_a(p, m0 + i, a + std::ptrdiff_t(i) * lda);
    return a;
}

// Rows [m0, m1) x columns [n0, n1) of a kBF16Panels problem (n0 a multiple of 16: task columns
// are multiples of 32), epilogue included.
template <class S>
void gemm_tile_panel_stream(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    using AElem = typename S::AElem;
    const int rows = m1 - m0;
    const std::ptrdiff_t lda = S::a_len(p.k);
    AElem* a = prepared_rows<S>(p, m0, m1);

    const auto* w = static_cast<const std::uint32_t*>(p.w);
    const auto* w_up = static_cast<const std::uint32_t*>(p.w_up);
    constexpr int kCols = S::kPanels * kPanelOutputs;
    const std::size_t acc_bytes = sizeof(float) * std::size_t(rows) * kCols;
    auto* acc = static_cast<float*>(thread_scratch(kScratchC, acc_bytes));
    float* acc2 =
        w_up != nullptr ? static_cast<float*>(thread_scratch(kScratchC2, acc_bytes)) : nullptr;
    for (int j0 = n0; j0 < n1; j0 += kCols) {
        const int cols = std::min(kCols, n1 - j0);
        const int g = (cols + kPanelOutputs - 1) / kPanelOutputs;
        const int panel0 = j0 / kPanelOutputs;
        panel_stream_matrix<S>(a, lda, rows, p.k, w, p.ldw, panel0, g, acc, kCols);
        if (w_up != nullptr) {
            panel_stream_matrix<S>(a, lda, rows, p.k, w_up, p.ldw, panel0, g, acc2, kCols);
        }
        S::epilogue(p, acc, acc2, kCols, m0, m1, j0, j0 + cols);
    }
}

// Small m on weights as stored ([n, k] bf16 rows, WeightType::kBF16: the logits screen keeps
// lm_head so, model/logits_screen.h; up to 4 rows on AVX-512 take gemm_tile_row_direct below):
// the panel stream above on panels made a chunk at a time.
// Each chunk of pairs of G panels' rows is interleaved into an L1 scratch in the load-time panel
// layout (S::rows_to_panel, 16 KiB), then every row group runs S::chunk over it: the values and
// the order of the load-time panels, so the same bits as gemm_tile_panel_stream (and as the
// packed path's, which packs the same pairs). The packed stream (gemm_tile_stream) packs 64
// columns x 256 k at a time into a kNR layout and leaves each of the 64 rows' 4 KiB to the
// hardware prefetchers, which follow few such streams; here each chunk prefetches the next
// chunk's lines while it reads its own (about twice the bandwidth: bench/README.md).
template <class S>
void gemm_tile_row_stream(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    using AElem = typename S::AElem;
    // A row holds one AElem per k (f32) or per k pair (bf16 pairs).
    constexpr std::ptrdiff_t kAPerPair = std::is_same_v<AElem, float> ? 2 : 1;
    constexpr int kG = S::kPanels;
    constexpr int kCols = kG * kPanelOutputs;
    constexpr std::ptrdiff_t kChunkStride = kStreamChunkPairs * kPanelOutputs;
    const int rows = m1 - m0;
    const std::ptrdiff_t lda = S::a_len(p.k);
    AElem* a = prepared_rows<S>(p, m0, m1);

    const bool gated = p.w_up != nullptr;
    const std::size_t panel_bytes = sizeof(std::uint32_t) * kG * kChunkStride;
    auto* panel = static_cast<std::uint32_t*>(thread_scratch(kScratchB, panel_bytes));
    auto* panel2 =
        gated ? static_cast<std::uint32_t*>(thread_scratch(kScratchB2, panel_bytes)) : nullptr;
    const std::size_t acc_bytes = sizeof(float) * std::size_t(rows) * kCols;
    auto* acc = static_cast<float*>(thread_scratch(kScratchC, acc_bytes));
    float* acc2 = gated ? static_cast<float*>(thread_scratch(kScratchC2, acc_bytes)) : nullptr;
    const std::ptrdiff_t pairs = panel_pairs(p.k);
    const auto* w = static_cast<const std::uint16_t*>(p.w);
    const auto* w_up = static_cast<const std::uint16_t*>(p.w_up);
    for (int j0 = n0; j0 < n1; j0 += kCols) {
        const int cols = std::min(kCols, n1 - j0);
        const int g = (cols + kPanelOutputs - 1) / kPanelOutputs;
        for (std::ptrdiff_t t0 = 0; t0 < pairs; t0 += kStreamChunkPairs) {
            const std::ptrdiff_t t1 = std::min(pairs, t0 + kStreamChunkPairs);
            // The next chunk's lines: these rows further along k, or the next columns' first.
            const std::ptrdiff_t ahead =
                t1 < pairs ? 2 * kStreamChunkPairs : kCols * p.ldw - 2 * t0;
            const bool odd_tail = t1 == pairs && p.k % 2 != 0;
            auto run = [&](const std::uint16_t* src, std::uint32_t* dst, float* sums) {
                for (int q = 0; q < g; ++q) {
                    const int r0 = j0 + q * kPanelOutputs;
                    S::rows_to_panel(src + std::ptrdiff_t(r0) * p.ldw, p.ldw,
                                     std::min(int{kPanelOutputs}, n1 - r0), p.k, t0, t1, ahead,
                                     dst + q * kChunkStride);
                }
                const AElem* at = a + t0 * kAPerPair;
                const std::ptrdiff_t n_t = t1 - t0;
                const bool first = t0 == 0;
                switch (g) {
                    case 1:
                        panel_stream_rows<S, 1>(at, lda, rows, dst, kChunkStride, 0, n_t, odd_tail,
                                                first, sums, kCols);
                        break;
                    case 2:
                        panel_stream_rows<S, 2>(at, lda, rows, dst, kChunkStride, 0, n_t, odd_tail,
                                                first, sums, kCols);
                        break;
                    case 3:
                        panel_stream_rows<S, 3>(at, lda, rows, dst, kChunkStride, 0, n_t, odd_tail,
                                                first, sums, kCols);
                        break;
                    default:
                        panel_stream_rows<S, 4>(at, lda, rows, dst, kChunkStride, 0, n_t, odd_tail,
                                                first, sums, kCols);
                        break;
                }
            };
            run(w, panel, acc);
            if (gated) run(w_up, panel2, acc2);
        }
        S::epilogue(p, acc, acc2, kCols, m0, m1, j0, j0 + cols);
    }
}

// Up to 4 rows on weights as stored, with no panel in memory (AVX-512 tiers): each 16 rows x 16
// pairs of weights is loaded and transposed in registers and fed straight to the chains
// (S::row_group), G panels' rows at a time over all of k: the same pairs in the same order as
// from a panel, so the same bits. Through the L1 panel of gemm_tile_row_stream one row ran at
// about half the load-time panels' speed (4 KiB apart, the 64 rows of a chunk share a few L1
// sets with the panel being written and read back); fed from registers it nears theirs
// (bench/README.md).
template <class S, int R, int G>
void row_direct_pass(const GemmArgs& p, const typename S::AElem* a, std::ptrdiff_t lda, int m0,
                     int n0, int n1) {
    constexpr int kCols = G * kPanelOutputs;
    const bool gated = p.w_up != nullptr;
    const std::size_t acc_bytes = sizeof(float) * R * kCols;
    auto* acc = static_cast<float*>(thread_scratch(kScratchC, acc_bytes));
    float* acc2 = gated ? static_cast<float*>(thread_scratch(kScratchC2, acc_bytes)) : nullptr;
    const auto* w = static_cast<const std::uint16_t*>(p.w);
    const auto* w_up = static_cast<const std::uint16_t*>(p.w_up);
    for (int j0 = n0; j0 < n1; j0 += kCols) {
        const int cols = std::min(kCols, n1 - j0);
        S::template row_group<R, G>(a, lda, w + std::ptrdiff_t(j0) * p.ldw, p.ldw, cols, p.k, acc,
                                    kCols);
        if (gated) {
            S::template row_group<R, G>(a, lda, w_up + std::ptrdiff_t(j0) * p.ldw, p.ldw, cols, p.k,
                                        acc2, kCols);
        }
        S::epilogue(p, acc, acc2, kCols, m0, m0 + R, j0, j0 + cols);
    }
}

// Rows [m0, m1) (at most 4) x columns [n0, n1) of a kBF16 problem, epilogue included. Four
// independent chains per pass: one row over 4 panels' rows, 2 x 2, or 3-4 rows over one.
template <class S>
void gemm_tile_row_direct(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    const std::ptrdiff_t lda = S::a_len(p.k);
    const typename S::AElem* a = prepared_rows<S>(p, m0, m1);
    switch (m1 - m0) {
        case 1:
            return row_direct_pass<S, 1, 4>(p, a, lda, m0, n0, n1);
        case 2:
            return row_direct_pass<S, 2, 2>(p, a, lda, m0, n0, n1);
        case 3:
            return row_direct_pass<S, 3, 1>(p, a, lda, m0, n0, n1);
        default:
            return row_direct_pass<S, 4, 1>(p, a, lda, m0, n0, n1);
    }
}

// A tier's small-m tile (GemvTileFn): load-time panels stream through S; weights as stored
// through S as well, up to 4 rows straight from the rows where the tier has S::row_group
// (kRowDirect); anything else (f32 weights, an A loader) on the packed Stream<MR> kernels.
template <class S, template <int> class Stream, int kWideMR, bool kRowDirect>
void gemv_tile_small_m(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    if (p.w_type == WeightType::kBF16Panels && p.load_a == nullptr) {
        return gemm_tile_panel_stream<S>(p, m0, m1, n0, n1);
    }
    if (p.w_type == WeightType::kBF16 && p.load_a == nullptr) {
        if constexpr (kRowDirect) {
            if (m1 - m0 <= 4) return gemm_tile_row_direct<S>(p, m0, m1, n0, n1);
        }
        return gemm_tile_row_stream<S>(p, m0, m1, n0, n1);
    }
    gemm_tile_stream<Stream, kWideMR>(p, m0, m1, n0, n1);
}

// A tier's GemmKernels (kernels/kernel_table.h; isa left to the table): the blocked tile on its
// kernel traits K, the small-m tile above, and A packed once for all tasks (gemm_driver.h).
template <class K, class S, template <int> class Stream, int kWideMR, bool kRowDirect>
constexpr GemmKernels tier_gemm_kernels() {
    return {.gemm_tile = &gemm_tile_blocked<K>,
            .gemv_tile = &gemv_tile_small_m<S, Stream, kWideMR, kRowDirect>,
            .blocking = {.mr = K::kMR, .nr = K::kNR, .kc = K::kKC, .mc = K::kMC, .nc = K::kNC},
            .packed_a_bytes = &packed_a_bytes<K>,
            .pack_a = &pack_a_shared<K>};
}

}  // namespace qvl::kernels::detail
