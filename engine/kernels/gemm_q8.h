// Int8 weights for GEMM/GEMV: symmetric int8 with one f32 scale per block of `block` values
// along k, quantized at load from bf16/f32 checkpoint matrices; activations quantized on the fly
// the same way (per row, per block). The product of one block is exact in int32.
//
// Formula (the spec, kernels/ref/gemm_q8_ref.cpp): for a row x of length k, block b covers
// columns [b·block, (b+1)·block) (zero-padded past k); amax = max |x| over the block, d = amax/127
// (0 for an all-zero block) and q = nearbyint(x · (127/amax)) in [-127, 127]. Then
//   c[i][j] = act(Σ_b d_a[i][b] · d_w[j][b] · Σ_{kk in b} q_a[i][kk] · q_w[j][kk] + bias[j]) + res
// and the gated form silu(gate)·up, as in kernels/gemm.h (the same GemmArgs, gated when w_up is
// set, with w_type = WeightType::kQ8 and w = const Q8Matrix*; ldw is unused).
//
// Every tier (scalar, AVX2, AVX-512 VNNI) quantizes activations bit-identically to the reference
// and sums the blocks of one output element in the same order with the same f32 operations
// (t = float(isum)·d_w; acc = fma(t, d_a, acc)), so the sums agree bit for bit across tiers and
// kernels; the epilogue (bias, activation, residual) is the tier's own, as for its f32 GEMM, and
// the same for every m. So a row's result depends only on that row and the tier: never on m, on
// which rows share a call, or on the thread split.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa.h"
#include "kernels/types.h"

namespace qvl::kernels {

// Output columns are stored in panels of 16; inside a panel, k runs in groups of 4 bytes per
// column (the VNNI dot-product layout): byte (((panel·k_blocks + b)·block/4 + g)·16 + col)·4 + t
// holds w[panel·16 + col][b·block + 4g + t]. Scales: scales[(panel·k_blocks + b)·16 + col].
// Columns past rows and k past cols are zero (scale 0).
inline constexpr int kQ8Panel = 16;

struct Q8Matrix {
    int rows = 0, cols = 0;  // n (outputs) and k (inputs), as the source matrix
    int block = 0;           // values per scale along k: 32, 64 or a multiple of 128
    int k_blocks = 0;        // ceil(cols / block)
    int panels = 0;          // ceil(rows / 16)
    const std::int8_t* q = nullptr;
    const float* scales = nullptr;
    // 4: 4-bit weights in nibbles with IEEE half scales (kernels/gemm_q4.h: q holds the packed
    // nibbles, scales_f16 the scales, scales is null); the products, activations and the block
    // chain are the int8 ones, so the same driver and epilogue serve both.
    int bits = 8;
    const std::uint16_t* scales_f16 = nullptr;
};

// True for the supported block sizes: 32, 64, and multiples of 128 up to kQ8MaxBlock. A block
// as long as the row (q8_row_block) gives one scale per output channel and per activation row
// (the vision tower's int8 weights): one integer sum per output, exact in int32 up to
// kQ8MaxBlock values (255 · 127 · 8192 < 2^31; its conversion to f32 then rounds, the same on
// every tier).
inline constexpr int kQ8MaxBlock = 8192;
bool q8_block_ok(int block);
// The block that spans a whole row of `cols` values.
int q8_row_block(int cols);
// Bytes of int8 data and of scales for a rows x cols matrix (each a multiple of 64).
std::size_t q8_data_bytes(int rows, int cols, int block);
std::size_t q8_scale_bytes(int rows, int cols, int block);
// Describes a matrix over caller-provided storage (q: q8_data_bytes, scales: q8_scale_bytes;
// any alignment, 64 bytes is best). Fills nothing.
Q8Matrix q8_describe(int rows, int cols, int block, std::int8_t* q, float* scales);
// Sums of squares per weight row of a quantization, in double, for error bounds (the logits
// screen): error[r] = Σ_k (w^ - w)², source[r] = Σ_k w², dequantized[r] = Σ_k w^², where w^ =
// q · d is the dequantized weight. The terms come from exact values (w and q · d are exact in
// double) and each operation rounds by at most 2^-53 relative; the sums run in a fixed order (8
// lanes over k, then the lanes), so the bits do not depend on the ISA or the thread count.
// Indexed by row; rows of panels not quantized are left alone.
struct Q8RowSquares {
    double* error = nullptr;
    double* source = nullptr;
    double* dequantized = nullptr;
};

// Quantizes panels [panel0, panel1) of w ([rows, cols], row stride ldw, bf16 or f32) into m's
// storage, and, with `squares`, each row's sums of squares. Panels are independent, so callers
// may run disjoint ranges on different threads. The result is the same on every ISA (isa only
// picks the row quantizer's speed).
void q8_quantize_panels(const void* w, WeightType type, std::ptrdiff_t ldw, const Q8Matrix& m,
                        int panel0, int panel1, Isa isa = Isa::kScalar,
                        const Q8RowSquares* squares = nullptr);
// One weight of a quantized matrix and its block scale (for tests and the reference); for a
// 4-bit matrix the signed value q in [-8, 7] and its half scale widened.
std::int8_t q8_weight(const Q8Matrix& m, int row, int col);
float q8_scale(const Q8Matrix& m, int row, int block_index);

// Quantizes one activation row x[0, k) into q[0, k_blocks·block) (zero padded), d[k_blocks]
// and sums[k_blocks] (Σ q over each block; the VNNI tier needs it for its +128 offset).
void q8_quantize_row(const float* x, int k, int block, std::int8_t* q, float* d,
                     std::int32_t* sums);

struct GemmArgs;
namespace ref {
// The specification: activations quantized with q8_quantize_row, block products in int, the
// scaled block sums and the epilogue in double. Plain and gated (w_up set) like ref::gemm_f32.
void gemm_q8(const GemmArgs&);
}  // namespace ref

}  // namespace qvl::kernels
