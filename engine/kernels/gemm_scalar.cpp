// The scalar tier of GEMM/GEMV: portable loops with f32 sums, for machines without AVX2 and as
// the baseline the SIMD tiers are benchmarked against. Not the spec (that is ref/gemm_ref.cpp).
#include <algorithm>
#include <cstddef>

#include "base/bf16.h"
#include "kernels/gemm_internal.h"
#include "kernels/weight_panels.h"

namespace qvl::kernels::detail {
namespace {

constexpr int kBlockN = 64;

// Widens (and, for kBF16 precision, rounds) k weights of row j into out.
void load_weight_row(const GemmArgs& p, const void* w, int j, float* out) {
    if (p.w_type == WeightType::kBF16Panels) {
        const auto* panels = static_cast<const std::uint32_t*>(w);
        for (int kk = 0; kk < p.k; ++kk)
            out[kk] = base::bf16_to_f32(base::bf16{panel_weight_bits(panels, p.ldw, j, kk)});
        return;
    }
    const std::ptrdiff_t off = std::ptrdiff_t(j) * p.ldw;
    if (p.w_type == WeightType::kBF16) {
        const base::bf16* row = static_cast<const base::bf16*>(w) + off;
        for (int kk = 0; kk < p.k; ++kk) out[kk] = base::bf16_to_f32(row[kk]);
    } else {
        const float* row = static_cast<const float*>(w) + off;
        for (int kk = 0; kk < p.k; ++kk)
            out[kk] = p.round_bf16() ? base::round_to_bf16(row[kk]) : row[kk];
    }
}

float dot(const float* a, const float* b, int k) {
    float sum = 0.0f;
    for (int kk = 0; kk < k; ++kk) sum += a[kk] * b[kk];
    return sum;
}

void tile(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    const int rows = m1 - m0;
    const std::size_t k = std::size_t(p.k);
    float* a = static_cast<float*>(thread_scratch(kScratchA, sizeof(float) * rows * k));
    for (int i = 0; i < rows; ++i) {
        float* dst = a + i * k;
        if (p.load_a != nullptr) {
            p.load_a(p.a_ctx, m0 + i, 0, p.k, dst);
        } else {
            const float* src = p.a + std::ptrdiff_t(m0 + i) * p.lda;
            for (std::size_t kk = 0; kk < k; ++kk) dst[kk] = src[kk];
        }
        if (p.round_bf16()) {
            for (std::size_t kk = 0; kk < k; ++kk) dst[kk] = base::round_to_bf16(dst[kk]);
        }
    }
    float* wrow = static_cast<float*>(thread_scratch(kScratchB, sizeof(float) * k));
    const bool gated = p.w_up != nullptr;
    float* acc = static_cast<float*>(thread_scratch(kScratchC, sizeof(float) * rows * kBlockN));
    float* acc2 = static_cast<float*>(thread_scratch(kScratchC2, sizeof(float) * rows * kBlockN));
    for (int jb = n0; jb < n1; jb += kBlockN) {
        const int je = std::min(n1, jb + kBlockN);
        for (int j = jb; j < je; ++j) {
            load_weight_row(p, p.w, j, wrow);
            for (int i = 0; i < rows; ++i) acc[i * kBlockN + (j - jb)] = dot(a + i * k, wrow, p.k);
            if (!gated) continue;
            load_weight_row(p, p.w_up, j, wrow);
            for (int i = 0; i < rows; ++i) acc2[i * kBlockN + (j - jb)] = dot(a + i * k, wrow, p.k);
        }
        gemm_epilogue(p, acc, acc2, kBlockN, m0, m1, jb, je);
    }
}

}  // namespace

void gemm_tile_scalar(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    tile(p, m0, m1, n0, n1);
}

void gemv_tile_scalar(const GemmArgs& p, int m0, int m1, int n0, int n1) {
    tile(p, m0, m1, n0, n1);
}

}  // namespace qvl::kernels::detail
