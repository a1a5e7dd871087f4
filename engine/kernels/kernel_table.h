// The one way to pick a kernel: a KernelTable per ISA tier, built once, holding every kernel
// family's entry for that tier. Callers take `const KernelTable&` from kernels_for(isa) (a tier
// chosen by the caller, e.g. resolve_isa of a user's request) or best_table() (the best tier
// this CPU runs), and call through it; nothing outside kernels/ checks CPU features or switches
// over Isa.
//
// Tier reuse and the bf16 rules are written in the table (kernel_table.cpp):
// - kScalar: the references (kernels/ref) and the portable GEMM loops (gemm_scalar.cpp).
// - kAvx2: its own GEMM/GEMV, the xsimd ops, flash attention and the image kernels.
// - kAvx512: its own GEMM/GEMV, xsimd ops and attention; reuses the AVX2 image kernels (they
//   are load/shuffle/store bound and gain little from 512-bit vectors).
// - kAvx512Bf16: reuses every kAvx512 entry and adds vdpbf16ps GEMM/GEMV and bf16 attention.
// A kBF16 request (GemmPrecision::kBF16, AttentionArgs::round_bf16) is resolved in one place:
// gemm_kernels(precision) and the attention member below. Where the tier has no bf16 products
// (bf16_products == false), GEMM rounds the operands to bf16 and multiplies in f32 (the same
// numbers up to summation order) and attention runs in f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "kernels/image_patch.h"
#include "kernels/isa.h"
#include "kernels/norm.h"
#include "kernels/patch_embed.h"
#include "kernels/pos_embed.h"
#include "kernels/resize.h"
#include "kernels/rope.h"
#include "kernels/softmax.h"

namespace qvl::kernels {

// Register tile (mr x nr) and cache blocks (kc along k, mc rows, nc columns) of a packed GEMM
// micro-kernel; all zero for the scalar loops, which do not pack.
struct GemmBlocking {
    int mr = 0, nr = 0, kc = 0, mc = 0, nc = 0;
};

// Computes rows [m0, m1) x columns [n0, n1) of the output over all of k, epilogue included;
// bounds need no alignment to the tile sizes. Internal: reached through KernelTable::gemm_task.
using GemmTileFn = void (*)(const GemmArgs& p, int m0, int m1, int n0, int n1);

// One tier's GEMM for one precision: the packed, register-blocked path for m > kGemvMaxM and
// the streaming path (the same micro-kernel, L1-sized blocks) for m <= kGemvMaxM (kernels/gemm.h).
struct GemmKernels {
    GemmTileFn gemm_tile = nullptr;
    GemmTileFn gemv_tile = nullptr;
    GemmBlocking blocking;  // of gemm_tile
    // A packed once for all of gemm_tile's tasks (GemmArgs::packed_a): its bytes, and the
    // packing of rows [m0, m1). Null where the tier has no such layout (scalar).
    std::size_t (*packed_a_bytes)(const GemmArgs& p) = nullptr;
    void (*pack_a)(const GemmArgs& p, int m0, int m1) = nullptr;
    // The tier these tiles belong to: int8 weights (WeightType::kQ8, kernels/gemm_q8.h) pick
    // their panel kernel by it.
    Isa isa = Isa::kScalar;
};

// Entries that are plain function pointers, called as table.layer_norm_f32(args). Contracts in
// the family headers (norm.h, activation.h, softmax.h, rope.h, pos_embed.h, resize.h,
// image_patch.h). Each x86/ops_<isa>.cpp defines one of these from the simd/ templates.
struct VectorKernels {
    void (*layer_norm_f32)(const LayerNormArgs&) = nullptr;
    void (*rms_norm_f32)(const RmsNormArgs&) = nullptr;
    void (*gelu_tanh_f32)(const float* x, float* y, std::int64_t n) = nullptr;
    void (*gelu_erf_f32)(const float* x, float* y, std::int64_t n) = nullptr;
    void (*silu_mul_f32)(const float* gate, const float* up, float* y, std::int64_t n) = nullptr;
    void (*add_f32)(const float* a, const float* b, float* y, std::int64_t n) = nullptr;
    void (*softmax_f32)(float* x, int rows, int cols, std::ptrdiff_t stride) = nullptr;
    void (*rope_f32)(const RopeArgs&) = nullptr;
    void (*pos_embed_interpolate)(const PosEmbedArgs&) = nullptr;
};

struct ImageKernels {
    void (*resize_vertical_u8)(const ResizeVerticalArgs&) = nullptr;
    void (*resize_horizontal_rgb_u8)(const ResizeHorizontalArgs&) = nullptr;
    void (*patch_normalize_u8)(const PatchNormalizeArgs&) = nullptr;
    void (*copy_f32_streaming)(const float* src, float* dst, std::size_t n) = nullptr;
};

struct KernelTable : VectorKernels, ImageKernels {
    Isa isa = Isa::kScalar;

    // GEMM/GEMV. gemm_f32 serves kF32 requests, gemm_bf16 kBF16 requests; bf16_products says
    // whether gemm_bf16 multiplies on bf16 hardware (vdpbf16ps) or rounds the operands to bf16
    // and multiplies in f32.
    GemmKernels gemm_f32;
    GemmKernels gemm_bf16;
    bool bf16_products = false;
    // int8 (q8) weights: empty until the int8 kernels plug in here (kernels/*q8*); a caller must
    // check gemm_q8.gemv_tile / gemm_tile before using it.
    GemmKernels gemm_q8;

    // Attention (kernels/attention.h): one task of the f32 kernel; the bf16-product kernel and
    // the shapes it supports (both null on tiers without one).
    void (*attention_f32_task)(const AttentionArgs&, int task, int num_tasks) = nullptr;
    void (*attention_bf16_task)(const AttentionArgs&, int task, int num_tasks) = nullptr;
    bool (*attention_bf16_supports)(const AttentionArgs&) = nullptr;

    // The GEMM entry that serves `precision` on this tier.
    const GemmKernels& gemm_kernels(GemmPrecision precision) const {
        return precision == GemmPrecision::kBF16 ? gemm_bf16 : gemm_f32;
    }

    // Task protocol of kernels/gemm.h, patch_embed.h and attention.h: run task `task` of
    // `num_tasks` (from gemm_num_tasks / patch_embed_num_tasks / attention_num_tasks).
    void gemm_task(const GemmArgs& args, int task, int num_tasks) const;
    // Shared packing of A (kernels/gemm.h): bytes of GemmArgs::packed_a for a run of
    // `num_tasks` tasks (0: the tasks would not share it, or this tier cannot), and its tasks.
    std::size_t gemm_shared_a_bytes(const GemmArgs& args, int num_tasks) const;
    void gemm_pack_a_task(const GemmArgs& args, int task, int num_tasks) const;
    void patch_embed_task(const PatchEmbedArgs& args, int task, int num_tasks) const;
    void attention_task(const AttentionArgs& args, int task, int num_tasks) const;

    // Single-threaded conveniences: every task on the calling thread.
    void gemm(const GemmArgs& args) const;
    void patch_embed(const PatchEmbedArgs& args) const;
};

// The table of a tier; the caller has made sure the CPU runs it (isa_supported, resolve_isa).
const KernelTable& kernels_for(Isa isa);

// kernels_for(best_isa()): the best tier of this CPU.
const KernelTable& best_table();

}  // namespace qvl::kernels
