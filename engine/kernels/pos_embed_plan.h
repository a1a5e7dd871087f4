// Internal to kernels/: the sampling grid of pos_embed_interpolate (kernels/pos_embed.h), shared
// by the reference and the SIMD versions so both blend the same neighbours with the same weights.
#pragma once

#include <algorithm>
#include <cmath>

namespace qvl::kernels {

struct PosEmbedSample {
    int lo = 0;         // floor of the sample position
    int hi = 0;         // min(lo + 1, side - 1)
    double frac = 0.0;  // position - lo
};

// Sample i of n over [0, side - 1], as numpy.linspace(0, side - 1, n) computes it in float64:
// i * step, with the last sample pinned to the end point.
inline PosEmbedSample pos_embed_sample(int i, int n, int side) {
    const double end = side - 1;
    double pos = 0.0;
    if (n > 1) pos = (i == n - 1) ? end : i * (end / (n - 1));
    PosEmbedSample s;
    s.lo = std::clamp(int(pos), 0, side - 1);  // truncation: pos >= 0
    s.hi = std::min(s.lo + 1, side - 1);
    s.frac = pos - s.lo;
    return s;
}

// Output row (merge-window order) of raster position (r, c) in a gh x gw grid.
inline std::ptrdiff_t pos_embed_out_row(int r, int c, int gw, int merge) {
    return (std::ptrdiff_t(r / merge) * (gw / merge) + c / merge) * merge * merge +
           (r % merge) * merge + c % merge;
}

}  // namespace qvl::kernels
