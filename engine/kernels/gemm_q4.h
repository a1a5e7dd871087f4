// 4-bit weights for GEMM/GEMV (`--weights q4`): symmetric 4-bit values with one IEEE half scale
// per block of `block` values along k, quantized at load from bf16/f32 checkpoint matrices. A
// 4-bit matrix is a Q8Matrix with bits = 4 (kernels/gemm_q8.h): activations are quantized per row
// and block exactly as for int8 weights, and every tier sums a block's products in int32 and
// chains the blocks with the same f32 operations, so results agree bit for bit across tiers,
// batch compositions and thread counts, as they do for int8.
//
// Formula (the spec, kernels/ref/gemm_q8_ref.cpp through q8_weight/q8_scale): for block b of a
// weight row, e = the value of largest magnitude (with its sign), d = half(e / -8) (0 for an
// all-zero or non-finite block) and q = clamp(nearbyint(w / d), -8, 7): the extreme value maps to
// -8, using all sixteen levels on its side (bench/quant/q4_format_error.py measured this against
// [-7, 7] and against a per-block minimum; see notes). The product of a block is
//   Σ q_a · q = Σ q_a · (q + 8) - 8 · Σ q_a,
// where q + 8 in [0, 15] is what is stored: vpdpbusd and vpmaddubsw take it as their unsigned
// operand as it is, and the correction is the activation quantizer's block sum (no bias pass).
//
// Layout: panels of 16 output columns as for int8; block b of panel p takes block·8 bytes at
// ((p·k_blocks + b)·block/8)·64. Inside it, 64 bytes per 8 values of k: byte h·64 + col·4 + t
// holds q + 8 of w[p·16 + col][b·block + 8h + t] in its low nibble and of
// w[p·16 + col][b·block + 8h + 4 + t] in its high nibble, so an and and a shift give two of the
// int8 kernels' 4-byte-per-column vectors. Scales: scales_f16[(p·k_blocks + b)·16 + col].
// Columns past rows and k past cols are zero (stored 8, scale 0).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gemm_q8.h"
#include "kernels/types.h"

namespace qvl::kernels {

// Bytes of nibble data and of half scales for a rows x cols matrix (each a multiple of 64).
std::size_t q4_data_bytes(int rows, int cols, int block);
std::size_t q4_scale_bytes(int rows, int cols, int block);
// Describes a 4-bit matrix over caller-provided storage (q: q4_data_bytes, scales:
// q4_scale_bytes). Fills nothing. Block sizes as q8_block_ok.
Q8Matrix q4_describe(int rows, int cols, int block, std::uint8_t* q, std::uint16_t* scales);

// Quantizes panels [panel0, panel1) of w ([rows, cols], row stride ldw, bf16 or f32) into m's
// storage. Panels are independent, so callers may run disjoint ranges on different threads; the
// result does not depend on the split, nor on isa (which only picks the row quantizer's speed).
void q4_quantize_panels(const void* w, WeightType type, std::ptrdiff_t ldw, const Q8Matrix& m,
                        int panel0, int panel1, Isa isa = Isa::kScalar);

// IEEE half from float, rounding to nearest even (overflow to infinity, NaN kept).
std::uint16_t f32_to_f16(float f);

}  // namespace qvl::kernels
