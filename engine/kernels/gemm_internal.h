// Internal plumbing between kernels/gemm.cpp (task split, dispatch, epilogue) and the per-ISA
// GEMM/GEMV drivers in kernels/x86/. Not for use outside kernels/.
#pragma once

#include <cstddef>

#include "kernels/gemm.h"
#include "kernels/kernel_table.h"
#include "kernels/scratch.h"

namespace qvl::kernels::detail {

// Runs one task of a problem on one tier's tiles (the engine behind KernelTable::gemm_task and
// friends).
int problem_num_tasks(int m, int n, int n_threads);
void run_problem_task(const GemmArgs& p, int task, int num_tasks, const GemmKernels& tiles);
// The output rectangle [m0, m1) x [n0, n1) of that task (false: the task has nothing to do):
// the one split both the kernels and the scaling trace (kernels/task_work.h) use.
struct TaskRect {
    int m0 = 0, m1 = 0, n0 = 0, n1 = 0;
};
bool problem_task_rect(const GemmArgs& p, int task, int num_tasks, const GemmKernels& tiles,
                       TaskRect* r);
// KernelTable::gemm_shared_a_bytes and gemm_pack_a_task on one precision's tiles.
std::size_t shared_a_bytes(const GemmArgs& p, int num_tasks, const GemmKernels& tiles);
void pack_a_task(const GemmArgs& p, int task, int num_tasks, const GemmKernels& tiles);

// Largest m that takes the streaming path (decode steps, short prefill chunks): the packed
// micro-kernel of the tier with blocks sized for one pass over the weights (a packed block
// serves only these few rows, so nothing is gained by keeping it in L2), and a column-only task
// split. The arithmetic is the large-m path's: every output element is the same single chain of
// operations over k, so a row's result never depends on m (the runtime's batch invariance and
// exact prefix reuse rest on this).
inline constexpr int kGemvMaxM = 32;
// The streaming blocks: kc values of k (f32 panels, and bf16 pair panels) by kNc columns, so the
// packed block (kc x kNc x 4 bytes = 32 KiB) stays in L1.
inline constexpr int kStreamKcF32 = 128;
inline constexpr int kStreamKcBf16 = 256;
inline constexpr int kStreamNc = 64;
// A tier's streaming blocking for a register tile of mr rows and nr columns: every one of the
// kGemvMaxM rows in one row block.
constexpr GemmBlocking stream_blocking(int mr, int nr, int kc) {
    return {.mr = mr, .nr = nr, .kc = kc, .mc = (kGemvMaxM + mr - 1) / mr * mr, .nc = kStreamNc};
}

// The blocking of each packed tier: the micro-kernel traits in x86/gemm_<isa>.cpp take their
// tile and block sizes from here, and the KernelTable entry reports them.
// nc 128: the B block (kc 256 x 128 floats = 128 KiB), the slab (<= 240 x 128 floats) and a row
// block of A (120 KiB) together stay inside a 512 KiB L2 (nc 512 needed 1.1 MiB).
inline constexpr GemmBlocking kBlockingAvx2{.mr = 6, .nr = 16, .kc = 256, .mc = 120, .nc = 128};
// kc 1024 with nc 128: the B block (512 KiB) and the slab (<= 224 x 128 floats) stay in L2,
// with fewer slab reloads than 192 x 512.
inline constexpr GemmBlocking kBlockingAvx512{.mr = 14, .nr = 32, .kc = 1024, .mc = 112, .nc = 128};
// kc 2048 (1024 pairs): k = 1024 and 2048 in one block (the slab is written once); the B block,
// 1024 pairs x nc 128 columns = 512 KiB, and the slab (<= 224 x 128 floats) stay in L2.
inline constexpr GemmBlocking kBlockingAvx512Bf16{
    .mr = 14, .nr = 32, .kc = 2048, .mc = 112, .nc = 128};

// The scalar tier's tiles (GemmTileFn, kernels/kernel_table.h). The SIMD tiers' GEMM entries
// are one GemmKernels each (x86/tier_entries.h), made by detail::tier_gemm_kernels
// (x86/gemm_panel_stream.h).
void gemm_tile_scalar(const GemmArgs& p, int m0, int m1, int n0, int n1);
void gemv_tile_scalar(const GemmArgs& p, int m0, int m1, int n0, int n1);

// Applies the epilogue to rows [m0, m1) x columns [n0, n1): acc holds the sums (acc[(i - m0) *
// ld_acc + (j - n0)]); for gated problems acc2 holds the up sums the same way. Writes p.c.
void gemm_epilogue(const GemmArgs& p, const float* acc, const float* acc2, std::ptrdiff_t ld_acc,
                   int m0, int m1, int n0, int n1);

// The same with AVX-512 (kernels/x86/gemm_epilogue_avx512.cpp) or AVX2 (the AVX2 tier's
// vectorised activations, kernels/x86/gemm_avx2.cpp); call only where it is supported.
void gemm_epilogue_avx512(const GemmArgs& p, const float* acc, const float* acc2,
                          std::ptrdiff_t ld_acc, int m0, int m1, int n0, int n1);
void gemm_epilogue_avx2(const GemmArgs& p, const float* acc, const float* acc2,
                        std::ptrdiff_t ld_acc, int m0, int m1, int n0, int n1);

// The source of each row of one A panel, for packing: rows [row0, row0 + n) x k [p0, p0 + kc)
// of A itself, or, when p.load_a is set, those rows gathered into the kScratchGather slot (one
// row of kc floats each). src[i] points at row row0 + i, column p0.
void gemm_a_rows(const GemmArgs& p, int row0, int n, int p0, int kc, const float** src);

}  // namespace qvl::kernels::detail
