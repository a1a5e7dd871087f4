// Scalar reference for kernels/pos_embed.h, blending in double.
#include "base/bf16.h"
#include "kernels/pos_embed.h"
#include "kernels/pos_embed_plan.h"

namespace qvl::kernels::ref {

namespace {
double table_at(const PosEmbedArgs& a, int row, int i) {
    const std::ptrdiff_t idx = std::ptrdiff_t(row) * a.dim + i;
    if (a.table_type == WeightType::kBF16) {
        return base::bf16_to_f32(static_cast<const base::bf16*>(a.table)[idx]);
    }
    return static_cast<const float*>(a.table)[idx];
}
}  // namespace

void pos_embed_interpolate(const PosEmbedArgs& a) {
    const int side = a.grid_side;
    for (int r = 0; r < a.gh; ++r) {
        const PosEmbedSample sh = pos_embed_sample(r, a.gh, side);
        for (int c = 0; c < a.gw; ++c) {
            const PosEmbedSample sw = pos_embed_sample(c, a.gw, side);
            const int rows[4] = {sh.lo * side + sw.lo, sh.lo * side + sw.hi, sh.hi * side + sw.lo,
                                 sh.hi * side + sw.hi};
            const double wts[4] = {(1 - sh.frac) * (1 - sw.frac), (1 - sh.frac) * sw.frac,
                                   sh.frac * (1 - sw.frac), sh.frac * sw.frac};
            float* out = a.out + pos_embed_out_row(r, c, a.gw, a.merge) * a.out_stride;
            for (int i = 0; i < a.dim; ++i) {
                double acc = 0.0;
                for (int t = 0; t < 4; ++t) acc += table_at(a, rows[t], i) * wts[t];
                out[i] = float(acc);
            }
        }
    }
}

}  // namespace qvl::kernels::ref
