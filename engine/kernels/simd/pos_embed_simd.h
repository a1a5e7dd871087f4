// pos_embed_interpolate (kernels/pos_embed.h) with f32 blending; plain loops that the ISA's
// compiler flags vectorize (the op runs once per image and is not hot).
#pragma once

#include <cstdint>
#include <cstring>

#include "base/bf16.h"
#include "kernels/pos_embed.h"
#include "kernels/pos_embed_plan.h"

namespace qvl::kernels::simd {

template <class Arch>
void pos_embed_interpolate(const PosEmbedArgs& a) {
    const int side = a.grid_side;
    constexpr int kChunk = 256;
    float rows_f32[4][kChunk];
    for (int r = 0; r < a.gh; ++r) {
        const PosEmbedSample sh = pos_embed_sample(r, a.gh, side);
        for (int c = 0; c < a.gw; ++c) {
            const PosEmbedSample sw = pos_embed_sample(c, a.gw, side);
            const int rows[4] = {sh.lo * side + sw.lo, sh.lo * side + sw.hi, sh.hi * side + sw.lo,
                                 sh.hi * side + sw.hi};
            const float w[4] = {float((1 - sh.frac) * (1 - sw.frac)),
                                float((1 - sh.frac) * sw.frac), float(sh.frac * (1 - sw.frac)),
                                float(sh.frac * sw.frac)};
            float* out = a.out + pos_embed_out_row(r, c, a.gw, a.merge) * a.out_stride;
            for (int i0 = 0; i0 < a.dim; i0 += kChunk) {
                const int n = std::min(kChunk, a.dim - i0);
                const float* src[4];
                for (int t = 0; t < 4; ++t) {
                    const std::ptrdiff_t off = std::ptrdiff_t(rows[t]) * a.dim + i0;
                    if (a.table_type == WeightType::kF32) {
                        src[t] = static_cast<const float*>(a.table) + off;
                    } else {
                        const auto* b = static_cast<const base::bf16*>(a.table) + off;
                        for (int i = 0; i < n; ++i) rows_f32[t][i] = base::bf16_to_f32(b[i]);
                        src[t] = rows_f32[t];
                    }
                }
                for (int i = 0; i < n; ++i) {
                    out[i0 + i] =
                        src[0][i] * w[0] + src[1][i] * w[1] + src[2][i] * w[2] + src[3][i] * w[3];
                }
            }
        }
    }
}

}  // namespace qvl::kernels::simd
