// The int8-weight GEMM specification (kernels/gemm_q8.h): plain loops, block sums in double.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/gemm_q8.h"

namespace qvl::kernels::ref {
namespace {

struct QuantizedRow {
    std::vector<std::int8_t> q;
    std::vector<float> d;
    std::vector<std::int32_t> sums;
};

QuantizedRow quantize(const float* a, int k, int block) {
    const int kb = (k + block - 1) / block;
    QuantizedRow r{std::vector<std::int8_t>(std::size_t(kb) * std::size_t(block)),
                   std::vector<float>(std::size_t(kb)), std::vector<std::int32_t>(std::size_t(kb))};
    q8_quantize_row(a, k, block, r.q.data(), r.d.data(), r.sums.data());
    return r;
}

double dot(const QuantizedRow& a, const Q8Matrix& w, int j) {
    double sum = 0.0;
    for (int b = 0; b < w.k_blocks; ++b) {
        std::int64_t isum = 0;
        for (int i = 0; i < w.block; ++i) {
            const int kk = b * w.block + i;
            if (kk < w.cols)
                isum += std::int64_t(a.q[std::size_t(kk)]) * std::int64_t(q8_weight(w, j, kk));
        }
        sum += double(a.d[std::size_t(b)]) * double(q8_scale(w, j, b)) * double(isum);
    }
    return sum;
}

}  // namespace

void gemm_q8(const GemmArgs& g) {
    if (g.w_up != nullptr) {  // the SwiGLU pair: silu(A·wᵀ) ⊙ (A·w_upᵀ)
        const auto& wg = *static_cast<const Q8Matrix*>(g.w);
        const auto& wu = *static_cast<const Q8Matrix*>(g.w_up);
        for (int i = 0; i < g.m; ++i) {
            const QuantizedRow a = quantize(g.a + std::ptrdiff_t(i) * g.lda, g.k, wg.block);
            float* c = g.c + std::ptrdiff_t(i) * g.ldc;
            for (int j = 0; j < g.n; ++j) {
                const double gate = dot(a, wg, j);
                const double up = dot(a, wu, j);
                c[j] = float(gate / (1.0 + std::exp(-gate)) * up);
            }
        }
        return;
    }
    const auto& w = *static_cast<const Q8Matrix*>(g.w);
    for (int i = 0; i < g.m; ++i) {
        const QuantizedRow a = quantize(g.a + std::ptrdiff_t(i) * g.lda, g.k, w.block);
        float* c = g.c + std::ptrdiff_t(i) * g.ldc;
        const float* r = g.residual != nullptr ? g.residual + std::ptrdiff_t(i) * g.ldr : nullptr;
        for (int j = 0; j < g.n; ++j) {
            double v = dot(a, w, j);
            if (g.bias != nullptr) v += g.bias[j];
            float out = gemm_activation_ref(g.act, float(v));
            if (g.act == GemmActivation::kNone) out = float(v);
            c[j] = r != nullptr ? float(double(out) + r[j]) : out;
        }
    }
}

}  // namespace qvl::kernels::ref
