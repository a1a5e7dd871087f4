// The GEMM specification: plain loops in the order of the formula, sums in double.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "base/bf16.h"
#include "kernels/gemm.h"
#include "kernels/weight_panels.h"

namespace qvl::kernels::ref {
namespace {

double weight_at(const void* w, WeightType t, std::ptrdiff_t ldw, int j, int kk, bool round) {
    if (t == WeightType::kBF16Panels) {
        const base::bf16 b{panel_weight_bits(static_cast<const std::uint32_t*>(w), ldw, j, kk)};
        return base::bf16_to_f32(b);
    }
    const std::ptrdiff_t idx = std::ptrdiff_t(j) * ldw + kk;
    if (t == WeightType::kBF16) {
        return base::bf16_to_f32(static_cast<const base::bf16*>(w)[idx]);
    }
    const float v = static_cast<const float*>(w)[idx];
    return round ? base::round_to_bf16(v) : v;
}

double dot(const float* a, const void* w, WeightType t, std::ptrdiff_t ldw, int j, int k,
           bool round) {
    double sum = 0.0;
    for (int kk = 0; kk < k; ++kk) {
        const double x = round ? base::round_to_bf16(a[kk]) : a[kk];
        sum += x * weight_at(w, t, ldw, j, kk, round);
    }
    return sum;
}

}  // namespace

void gemm_f32(const GemmArgs& g) {
    const bool round = g.precision == GemmPrecision::kBF16;
    if (g.w_up != nullptr) {  // the SwiGLU pair
        for (int i = 0; i < g.m; ++i) {
            const float* a = g.a + std::ptrdiff_t(i) * g.lda;
            float* c = g.c + std::ptrdiff_t(i) * g.ldc;
            for (int j = 0; j < g.n; ++j) {
                const double gate = dot(a, g.w, g.w_type, g.ldw, j, g.k, round);
                const double up = dot(a, g.w_up, g.w_type, g.ldw, j, g.k, round);
                c[j] = float(gate / (1.0 + std::exp(-gate)) * up);
            }
        }
        return;
    }
    for (int i = 0; i < g.m; ++i) {
        const float* a = g.a + std::ptrdiff_t(i) * g.lda;
        float* c = g.c + std::ptrdiff_t(i) * g.ldc;
        const float* r = g.residual != nullptr ? g.residual + std::ptrdiff_t(i) * g.ldr : nullptr;
        for (int j = 0; j < g.n; ++j) {
            double v = dot(a, g.w, g.w_type, g.ldw, j, g.k, round);
            if (g.bias != nullptr) v += g.bias[j];
            // The activation is evaluated in double and rounded once.
            float out = gemm_activation_ref(g.act, float(v));
            if (g.act == GemmActivation::kNone) out = float(v);
            c[j] = r != nullptr ? float(double(out) + r[j]) : out;
        }
    }
}

}  // namespace qvl::kernels::ref
