// xsimd versions of kernels/norm.h (included only from ISA translation units). Two passes for
// LayerNorm (mean, then centred squares) as in the reference; f32 lanes accumulate.
#pragma once

#include <cmath>

#include "kernels/norm.h"
#include "kernels/simd/simd_util.h"

namespace qvl::kernels::simd {

template <class Arch>
float sum_f32(const float* x, int n) {
    using V = Vf<Arch>;
    constexpr int L = kLanes<Arch>;
    V a0(0.0f), a1(0.0f);
    int i = 0;
    for (; i + 2 * L <= n; i += 2 * L) {
        a0 += V::load_unaligned(x + i);
        a1 += V::load_unaligned(x + i + L);
    }
    for (; i + L <= n; i += L) a0 += V::load_unaligned(x + i);
    if (i < n) a1 += load_partial<Arch>(x + i, n - i, 0.0f);
    return xsimd::hadd(a0 + a1);
}

// sum (x[i] - c)^2
template <class Arch>
float sum_sq_f32(const float* x, int n, float c) {
    using V = Vf<Arch>;
    constexpr int L = kLanes<Arch>;
    const V vc(c);
    V a0(0.0f), a1(0.0f);
    int i = 0;
    for (; i + 2 * L <= n; i += 2 * L) {
        const V d0 = V::load_unaligned(x + i) - vc;
        const V d1 = V::load_unaligned(x + i + L) - vc;
        a0 = xsimd::fma(d0, d0, a0);
        a1 = xsimd::fma(d1, d1, a1);
    }
    for (; i + L <= n; i += L) {
        const V d = V::load_unaligned(x + i) - vc;
        a0 = xsimd::fma(d, d, a0);
    }
    if (i < n) {
        const V d = load_partial<Arch>(x + i, n - i, c) - vc;
        a1 = xsimd::fma(d, d, a1);
    }
    return xsimd::hadd(a0 + a1);
}

template <class Arch>
void layer_norm_f32(const LayerNormArgs& a) {
    using V = Vf<Arch>;
    constexpr int L = kLanes<Arch>;
    for (int r = 0; r < a.rows; ++r) {
        const float* x = a.x + r * a.x_stride;
        float* y = a.y + r * a.y_stride;
        const float mean = sum_f32<Arch>(x, a.dim) / float(a.dim);
        const float var = sum_sq_f32<Arch>(x, a.dim, mean) / float(a.dim);
        const V inv_std(float(1.0 / std::sqrt(double(var) + a.eps)));
        const V vmean(mean);
        int i = 0;
        for (; i + L <= a.dim; i += L) {
            const V t = (V::load_unaligned(x + i) - vmean) * inv_std;
            xsimd::fma(t, V::load_unaligned(a.w + i), V::load_unaligned(a.b + i))
                .store_unaligned(y + i);
        }
        if (i < a.dim) {
            const int n = a.dim - i;
            const V t = (load_partial<Arch>(x + i, n, 0.0f) - vmean) * inv_std;
            store_partial<Arch>(y + i, n,
                                xsimd::fma(t, load_partial<Arch>(a.w + i, n, 0.0f),
                                           load_partial<Arch>(a.b + i, n, 0.0f)));
        }
    }
}

template <class Arch>
void rms_norm_f32(const RmsNormArgs& a) {
    using V = Vf<Arch>;
    constexpr int L = kLanes<Arch>;
    for (int r = 0; r < a.rows; ++r) {
        const float* x = a.x + r * a.x_stride;
        float* y = a.y + r * a.y_stride;
        const float ms = sum_sq_f32<Arch>(x, a.dim, 0.0f) / float(a.dim);
        const V inv_rms(float(1.0 / std::sqrt(double(ms) + a.eps)));
        int i = 0;
        for (; i + L <= a.dim; i += L) {
            (V::load_unaligned(x + i) * inv_rms * V::load_unaligned(a.w + i))
                .store_unaligned(y + i);
        }
        if (i < a.dim) {
            const int n = a.dim - i;
            store_partial<Arch>(y + i, n,
                                load_partial<Arch>(x + i, n, 0.0f) * inv_rms *
                                    load_partial<Arch>(a.w + i, n, 0.0f));
        }
    }
}

}  // namespace qvl::kernels::simd
