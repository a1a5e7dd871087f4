// Internal plumbing of the int8-weight GEMM (kernels/gemm_q8.h): one driver (gemm_q8.cpp) that
// quantizes a tile's activation rows and runs a per-ISA panel kernel, then the shared epilogue.
// Not for use outside kernels/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gemm_internal.h"
#include "kernels/gemm_q8.h"

namespace qvl::kernels::detail {

// One 16-column panel of w against `rows` quantized activation rows: acc[r·16 + col] =
// Σ_b fma-chain of float(isum)·d_w then ·d_a (kernels/gemm_q8.h), in block order.
struct Q8PanelArgs {
    const Q8Matrix* w = nullptr;
    int panel = 0;
    int rows = 0;
    const std::int8_t* qa = nullptr;  // rows x (k_blocks·block), row stride lda_q bytes
    std::ptrdiff_t lda_q = 0;
    // qa holds q + 128 as unsigned bytes (q8_bias_row), for a kernel that takes activations
    // biased (the VNNI kernel, from kQ8VnniBiasedMinRows rows); else the signed q.
    bool biased = false;
    const float* da = nullptr;         // rows x k_blocks
    const std::int32_t* sa = nullptr;  // rows x k_blocks (Σ q per block)
    float* acc = nullptr;              // rows x 16
};
using Q8PanelFn = void (*)(const Q8PanelArgs&);
using Q8QuantizeRowFn = void (*)(const float* x, int k, int block, std::int8_t* q, float* d,
                                 std::int32_t* sums);

void q8_panel_scalar(const Q8PanelArgs& a);
void q8_panel_avx2(const Q8PanelArgs& a);
void q8_quantize_row_avx2(const float* x, int k, int block, std::int8_t* q, float* d,
                          std::int32_t* sums);
void q8_panel_avx512vnni(const Q8PanelArgs& a);
// Rows from which the VNNI kernel takes its activations biased: vpdpbusd then multiplies them
// as they are, with no flip of every weight vector and no per-row correction (one per panel
// instead: a pass of vpdpbusd over the panel's weights, as costly as one more row). Fewer rows
// are a decode step, which reads each weight once anyway. At four rows the per-panel pass still
// cost more than the flips; at eight the biased form is the faster (bench/README.md, kernel
// design measurements).
inline constexpr int kQ8VnniBiasedMinRows = 5;
// q + 128 in place, as unsigned bytes.
void q8_bias_row(std::int8_t* q, std::ptrdiff_t n);
void q8_quantize_row_avx512(const float* x, int k, int block, std::int8_t* q, float* d,
                            std::int32_t* sums);

// The int8 products on f32 FMAs (isa.h q8_fma_for_gemm), for tiles of at least kQ8FmaMinRows
// rows: fewer rows (a decode step) would widen more weights than they multiply. The tile runs
// over k in chunks of kQ8FmaChunk (or one block, if longer): each chunk of its activation rows is
// widened once, each panel's chunk of weights once, and the panels' running sums wait in memory
// between chunks, so a chunk's weights stay in L1 and its rows in L2.
inline constexpr int kQ8FmaMinRows = 16;
inline constexpr int kQ8FmaChunk = 256;

// One panel and chunk: for each row and block of the chunk, the block's sum of products (exact:
// every partial sum is an integer below 2^21, and f32 holds integers up to 2^24), then
// acc = fma(sum·d_w, d_a, acc), as the other kernels.
struct Q8FmaArgs {
    const float* w = nullptr;   // the panel's chunk widened: [k][16] (q8_widen_panel_avx2)
    const float* ws = nullptr;  // scales of the chunk's first block, 16 per block
    int blocks = 0;             // blocks in the chunk
    int block = 0;
    int rows = 0;
    const float* x = nullptr;  // the chunk's rows widened (q8_widen_rows_avx2); ldx = its k
    std::ptrdiff_t ldx = 0;
    const float* da = nullptr;  // row r, block b of the chunk at da[r·ld_da + b]
    std::ptrdiff_t ld_da = 0;
    float* acc = nullptr;  // rows x 16, carried from chunk to chunk
};
void q8_panel_fma_avx2(const Q8FmaArgs& a);
// Weights k0 .. k0 + kc of a panel (k0, kc multiples of 4) as floats, [k][16].
void q8_widen_panel_avx2(const Q8Matrix& w, int panel, int k0, int kc, float* out);
// Columns k0 .. k0 + kc of `rows` activation rows (row r at q + r·ldq) as floats, in the
// kernel's tiles of rows: a tile of R rows from row r0 holds (r0 + r, k0 + i) at
// out[r0·kc + i·R + r].
void q8_widen_rows_avx2(const std::int8_t* q, std::ptrdiff_t ldq, int rows, int k0, int kc,
                        float* out);

// The 4-bit panels (kernels/gemm_q4.h): the same arguments and sums, never biased activations
// (the weights are the unsigned operand as stored).
std::int8_t q4_weight(const Q8Matrix& m, int row, int col);
float q4_scale(const Q8Matrix& m, int row, int block_index);
void q4_panel_scalar(const Q8PanelArgs& a);
// One weight row quantized to 4 bits: x[0, n) (n a multiple of block, zero padded) into
// u = q + 8, one byte per value, and one half scale per block. The SIMD tiers give the
// reference's bytes (the same extreme, the same half scale, x / d rounded to nearest even).
using Q4QuantizeRowFn = void (*)(const float* x, int n, int block, std::uint8_t* u,
                                 std::uint16_t* d16);
void q4_quantize_row(const float* x, int n, int block, std::uint8_t* u, std::uint16_t* d16);
void q4_quantize_row_avx2(const float* x, int n, int block, std::uint8_t* u, std::uint16_t* d16);
void q4_quantize_row_avx512(const float* x, int n, int block, std::uint8_t* u, std::uint16_t* d16);
// The half scale of a block whose first value of largest magnitude is ext, or 0 when the block
// quantizes to zeros (ext zero or not finite, or a scale that underflows or overflows).
std::uint16_t q4_block_scale(float ext);
void q4_panel_avx2(const Q8PanelArgs& a);
void q4_panel_avx512vnni(const Q8PanelArgs& a);

// Rows [m0, m1) x columns [n0, n1) of a kQ8 problem, epilogue included (the hook that
// run_problem_task calls for w_type == kQ8). With GemmArgs::packed_a set, the rows' quantized
// activations are read from there (gemm_q8_quantize_a) instead of quantized by the task.
void gemm_q8_tile(const GemmArgs& p, int m0, int m1, int n0, int n1, Isa isa);

// The shared A of a kQ8 problem (kernels/gemm.h, "Shared packing"): every row quantized once
// for all column tasks, as each task would quantize it, so the same bits. Layout: q of all m
// rows (k_blocks·block bytes each, biased for the VNNI kernel), then their d, then their sums.
std::size_t gemm_q8_shared_a_bytes(const GemmArgs& p);
void gemm_q8_quantize_a(const GemmArgs& p, int m0, int m1, Isa isa);

}  // namespace qvl::kernels::detail
