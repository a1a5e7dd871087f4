// xsimd version of rope_f32 (kernels/rope.h); included only from ISA translation units.
#pragma once

#include "kernels/rope.h"
#include "kernels/simd/simd_util.h"

namespace qvl::kernels::simd {

template <class Arch>
void rope_f32(const RopeArgs& a) {
    using V = Vf<Arch>;
    constexpr int L = kLanes<Arch>;
    const int half = a.head_dim / 2;
    for (int r = 0; r < a.rows; ++r) {
        const float* cs = a.cos + r * a.cs_stride;
        const float* sn = a.sin + r * a.cs_stride;
        for (int h = 0; h < a.n_heads; ++h) {
            float* x = a.x + r * a.x_stride + std::ptrdiff_t(h) * a.head_dim;
            int i = 0;
            for (; i + L <= half; i += L) {
                const V x0 = V::load_unaligned(x + i), x1 = V::load_unaligned(x + i + half);
                const V c = V::load_unaligned(cs + i), s = V::load_unaligned(sn + i);
                xsimd::fms(x0, c, x1 * s).store_unaligned(x + i);
                xsimd::fma(x1, c, x0 * s).store_unaligned(x + i + half);
            }
            if (i < half) {
                const int n = half - i;
                const V x0 = load_partial<Arch>(x + i, n, 0.0f);
                const V x1 = load_partial<Arch>(x + i + half, n, 0.0f);
                const V c = load_partial<Arch>(cs + i, n, 0.0f);
                const V s = load_partial<Arch>(sn + i, n, 0.0f);
                store_partial<Arch>(x + i, n, xsimd::fms(x0, c, x1 * s));
                store_partial<Arch>(x + i + half, n, xsimd::fma(x1, c, x0 * s));
            }
        }
    }
}

}  // namespace qvl::kernels::simd
