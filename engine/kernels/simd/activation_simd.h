// xsimd versions of kernels/activation.h (included only from ISA translation units).
#pragma once

#include "kernels/simd/simd_util.h"

namespace qvl::kernels::simd {

// 0.5 x (1 + tanh(u)) == x / (1 + exp(-2u)): one exp, no cancellation near 1 + tanh = 0.
template <class Arch>
void gelu_tanh_f32(const float* x, float* y, std::int64_t n) {
    map1<Arch>(x, y, n, [](Vf<Arch> v) {
        const Vf<Arch> c2(-2.0f * 0.7978845608028654f);
        const Vf<Arch> u = v * xsimd::fma(Vf<Arch>(0.044715f) * v, v, Vf<Arch>(1.0f));
        return v / (Vf<Arch>(1.0f) + xsimd::exp(c2 * u));
    });
}

// 0.5 x erfc(-x / sqrt 2): erfc keeps relative accuracy in the negative tail.
template <class Arch>
void gelu_erf_f32(const float* x, float* y, std::int64_t n) {
    map1<Arch>(x, y, n, [](Vf<Arch> v) {
        return Vf<Arch>(0.5f) * v * xsimd::erfc(v * Vf<Arch>(-0.7071067811865476f));
    });
}

template <class Arch>
void silu_mul_f32(const float* gate, const float* up, float* y, std::int64_t n) {
    map2<Arch>(gate, up, y, n,
               [](Vf<Arch> g, Vf<Arch> u) { return g * u / (Vf<Arch>(1.0f) + xsimd::exp(-g)); });
}

template <class Arch>
void add_f32(const float* a, const float* b, float* y, std::int64_t n) {
    map2<Arch>(a, b, y, n, [](Vf<Arch> p, Vf<Arch> q) { return p + q; });
}

}  // namespace qvl::kernels::simd
