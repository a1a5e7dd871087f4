// xsimd version of kernels/softmax.h (included only from ISA translation units).
#pragma once

#include <cmath>
#include <cstddef>

#include "kernels/simd/simd_util.h"

namespace qvl::kernels::simd {

template <class Arch>
void softmax_f32(float* x, int rows, int cols, std::ptrdiff_t stride) {
    using V = Vf<Arch>;
    constexpr int L = kLanes<Arch>;
    for (int r = 0; r < rows; ++r) {
        float* row = x + r * stride;
        V vmax(-INFINITY);
        int i = 0;
        for (; i + L <= cols; i += L) vmax = xsimd::max(vmax, V::load_unaligned(row + i));
        if (i < cols) vmax = xsimd::max(vmax, load_partial<Arch>(row + i, cols - i, -INFINITY));
        const V m(hmax<Arch>(vmax));
        V vsum(0.0f);
        for (i = 0; i + L <= cols; i += L) {
            const V e = xsimd::exp(V::load_unaligned(row + i) - m);
            e.store_unaligned(row + i);
            vsum += e;
        }
        if (i < cols) {
            const V e = xsimd::exp(load_partial<Arch>(row + i, cols - i, -INFINITY) - m);
            store_partial<Arch>(row + i, cols - i, e);
            vsum += e;
        }
        const V inv(1.0f / xsimd::hadd(vsum));
        for (i = 0; i + L <= cols; i += L)
            (V::load_unaligned(row + i) * inv).store_unaligned(row + i);
        if (i < cols)
            store_partial<Arch>(row + i, cols - i,
                                load_partial<Arch>(row + i, cols - i, 0.0f) * inv);
    }
}

}  // namespace qvl::kernels::simd
