// Compile-time counts from run-time ones. The register-tiled kernels are templates on how many
// rows (or keys) their tile holds, so that the tile's accumulators live in registers; these
// helpers pick the instantiation for a run-time count. Used by the GEMM driver (the last row
// panel of a block), the int8 panels and the attention score tiles.
#pragma once

#include <type_traits>

namespace qvl::kernels::x86 {

// Calls f(std::integral_constant<int, R>{}) with R = min(n, kMax), for 1 <= n.
template <int kMax, class F>
inline void with_static_count(int n, F&& f) {
    static_assert(kMax >= 1);
    if constexpr (kMax == 1) {
        f(std::integral_constant<int, 1>{});
    } else if (n >= kMax) {
        f(std::integral_constant<int, kMax>{});
    } else {
        with_static_count<kMax - 1>(n, f);
    }
}

// Calls f(std::integral_constant<int, kMax>{}, i) for i = 0, kMax, 2 kMax, ... while a whole
// tile of kMax fits in [0, n), then f(std::integral_constant<int, n % kMax>{}, i) for the rest,
// if any.
template <int kMax, class F>
inline void for_static_tiles(int n, F&& f) {
    int i = 0;
    for (; i + kMax <= n; i += kMax) f(std::integral_constant<int, kMax>{}, i);
    if constexpr (kMax > 1) {
        if (i < n) with_static_count<kMax - 1>(n - i, [&](auto r) { f(r, i); });
    }
}

}  // namespace qvl::kernels::x86
