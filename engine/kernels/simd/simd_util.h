// Shared helpers of the simd/ templates (included only from ISA translation units). Everything
// here is a template on Arch, so the AVX2 and AVX-512 instantiations never collide (ODR).
#pragma once

#include <algorithm>
#include <cstdint>
#include <xsimd/xsimd.hpp>

namespace qvl::kernels::simd {

template <class Arch>
using Vf = xsimd::batch<float, Arch>;

template <class Arch>
constexpr int kLanes = int(Vf<Arch>::size);

// Largest lane.
template <class Arch>
float hmax(const Vf<Arch>& v) {
    alignas(64) float buf[kLanes<Arch>];
    v.store_aligned(buf);
    float m = buf[0];
    for (int i = 1; i < kLanes<Arch>; ++i) m = std::max(m, buf[i]);
    return m;
}

// Loads n < lanes floats, the other lanes set to `fill`, without touching memory past n.
template <class Arch>
Vf<Arch> load_partial(const float* p, std::int64_t n, float fill) {
    alignas(64) float buf[kLanes<Arch>];
    for (int i = 0; i < kLanes<Arch>; ++i) buf[i] = i < n ? p[i] : fill;
    return Vf<Arch>::load_aligned(buf);
}

template <class Arch>
void store_partial(float* p, std::int64_t n, const Vf<Arch>& v) {
    alignas(64) float buf[kLanes<Arch>];
    v.store_aligned(buf);
    for (std::int64_t i = 0; i < n; ++i) p[i] = buf[i];
}

// y[i] = op(x[i]) over whole vectors; the tail goes through the same op on a padded vector,
// so every element sees the same formula.
template <class Arch, class Op>
void map1(const float* x, float* y, std::int64_t n, Op op) {
    constexpr int L = kLanes<Arch>;
    std::int64_t i = 0;
    for (; i + L <= n; i += L) op(Vf<Arch>::load_unaligned(x + i)).store_unaligned(y + i);
    if (i < n) store_partial<Arch>(y + i, n - i, op(load_partial<Arch>(x + i, n - i, 0.0f)));
}

template <class Arch, class Op>
void map2(const float* a, const float* b, float* y, std::int64_t n, Op op) {
    constexpr int L = kLanes<Arch>;
    std::int64_t i = 0;
    for (; i + L <= n; i += L) {
        op(Vf<Arch>::load_unaligned(a + i), Vf<Arch>::load_unaligned(b + i)).store_unaligned(y + i);
    }
    if (i < n) {
        store_partial<Arch>(
            y + i, n - i,
            op(load_partial<Arch>(a + i, n - i, 0.0f), load_partial<Arch>(b + i, n - i, 0.0f)));
    }
}

}  // namespace qvl::kernels::simd
