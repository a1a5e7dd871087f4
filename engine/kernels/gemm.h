// GEMM and GEMV with fused epilogues: c = act(a · wᵀ + bias) + residual, the weights stored as
// in the checkpoint ([n, k] row-major, bf16 or f32; Hugging Face Linear layout), and the SwiGLU
// pair c = silu(a · w_gateᵀ) ⊙ (a · w_upᵀ).
//
// Contract (one GemmArgs for both):
// - a: [m, k] f32, row stride lda >= k (elements). w: [n, k], row stride ldw >= k, element type
//   w_type; no alignment is required of any pointer (safetensors promises none).
// - c: [m, n] f32, row stride ldc >= n. c must not overlap a, w or bias. residual ([m, n], row
//   stride ldr) may be exactly c (same pointer and stride: in-place residual add); no other
//   overlap. Nothing is read outside the described rows of any operand.
// - Accumulation is f32. kF32 multiplies the values as given. kBF16 rounds a (and f32 weights)
//   to bf16 (round to nearest even) first; on avx512bf16 the products run on vdpbf16ps, on other
//   ISAs the rounded values go through the f32 path (same numbers up to summation order).
// - One arithmetic for every m: each output element is a single chain of operations over k in
//   increasing order (f32 FMAs, or vdpbf16ps on bf16 pairs), so a row's result depends only on
//   that row of a (and the weights, precision and tier), never on m, on which rows share the
//   call, or on how the work is split over threads. m <= 32 (decode, short prefill chunks) runs
//   the tier's packed micro-kernel with streaming blocks and a column-only split; larger m the
//   BLIS-style blocking with L2-resident panels.
// - m, n, k >= 0; m == 0 or n == 0 does nothing; k == 0 gives act(bias) + residual.
#pragma once

#include <cstddef>

#include "kernels/types.h"

namespace qvl::kernels {

enum class GemmActivation { kNone, kGeluTanh, kGeluErf, kSilu };  // applied to (A·Wᵀ + bias)
// kBF16: A (and f32 weights) rounded to bf16; products on vdpbf16ps where the tier has them,
// else the rounded values multiplied in f32 (KernelTable::bf16_products).
enum class GemmPrecision { kF32, kBF16 };
// The one argument struct of every GEMM (plain, gated, patch embedding). Call sites use
// designated initializers: {.m = rows, .n = out, .k = in, .a = x, .lda = ld, .w = ..., ...}.
struct GemmArgs {
    int m = 0, n = 0, k = 0;
    const float* a = nullptr;
    std::ptrdiff_t lda = 0;  // [m, k] f32 activations, row stride lda
    const void* w = nullptr;
    // Set: the SwiGLU pair c = silu(A·wᵀ) ⊙ (A·w_upᵀ) (w is the gate), both [n, k] with the same
    // ldw and w_type; bias, act and residual must then be unset.
    const void* w_up = nullptr;
    std::ptrdiff_t ldw = 0;  // [n, k] weights (bf16 or f32), row stride ldw; any alignment
    WeightType w_type = WeightType::kBF16;  // from kernels/types.h
    const float* bias = nullptr;            // [n] or null
    GemmActivation act = GemmActivation::kNone;
    const float* residual = nullptr;
    std::ptrdiff_t ldr = 0;  // [m, n] or null; added after act; may alias c exactly
    float* c = nullptr;
    std::ptrdiff_t ldc = 0;  // [m, n] output
    GemmPrecision precision = GemmPrecision::kF32;
    // When set, A is virtual: load_a(a_ctx, row, k0, count, out) writes A[row][k0 .. k0+count)
    // to out (the patch embedding gathers pixels this way); a and lda are then unused.
    void (*load_a)(const void* ctx, int row, int k0, int count, float* out) = nullptr;
    const void* a_ctx = nullptr;
    // Set: A already packed for every task into this buffer (see "Shared packing" below);
    // 64-byte aligned, KernelTable::gemm_shared_a_bytes long.
    void* packed_a = nullptr;

    bool round_bf16() const { return precision == GemmPrecision::kBF16; }
};
// Thread-free work decomposition: the caller runs tasks [0, num_tasks) in any order on any threads
// through the KernelTable of its tier (kernels/kernel_table.h), e.g.
//   pool.parallel_for(nt, [&](int t) { table.gemm_task(args, t, nt); });
// Tasks split output tiles (columns, and rows when m is large), never k, so results are
// bit-identical for any n_threads.
int gemm_num_tasks(const GemmArgs& args, int n_threads);
// Shared packing of A, optional. The tasks of a large-m GEMM split columns (and rows), and each
// packs A for its rows into the micro-kernel's panels; with several column tasks over the same
// rows, that is done once per task (4 times for a 212-row prefill GEMM on 2 threads). Instead:
//   bytes = table.gemm_shared_a_bytes(args, nt);           // 0: not worth it here
//   args.packed_a = buffer;                                  // 64-byte aligned, >= bytes
//   np = gemm_pack_a_num_tasks(args, n_threads);
//   pool.parallel_for(np, [&](int t) { table.gemm_pack_a_task(args, t, np); });
//   pool.parallel_for(nt, [&](int t) { table.gemm_task(args, t, nt); });
// The packed values are the ones each task would pack, so the results are the same bits. For
// int8 weights (WeightType::kQ8) the shared A is the quantized activation rows, which each task
// would otherwise quantize again (a cost that grows with the number of column tasks).
int gemm_pack_a_num_tasks(const GemmArgs& args, int n_threads);
namespace ref {
void gemm_f32(const GemmArgs&);  // plain and gated
}  // namespace ref

// The activation functions of the epilogue, in f32 from double-precision formulas (the spec the
// SIMD epilogues are tested against): GELU tanh = 0.5·u·(1 + tanh(√(2/π)(u + 0.044715u³))),
// GELU erf = 0.5·u·(1 + erf(u/√2)), silu(u) = u / (1 + e^-u).
float gemm_activation_ref(GemmActivation act, float u);

}  // namespace qvl::kernels
