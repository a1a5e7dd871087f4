// Patch embedding as a GEMM over a virtual A: the packing asks load_pixels for row segments.
#include "kernels/patch_embed.h"

#include <algorithm>

#include "kernels/gemm_internal.h"

namespace qvl::kernels {
namespace {

// A[row][k0 .. k0 + count) of the virtual pixel matrix.
void load_pixels(const void* ctx, int row, int k0, int count, float* out) {
    const auto& a = *static_cast<const PatchEmbedArgs*>(ctx);
    const int p = a.patch, mg = a.merge;
    const int gw = a.width / p;
    const int window = row / (mg * mg), inner = row % (mg * mg);
    const int bh = window / (gw / mg), bw = window % (gw / mg);
    const int ph = bh * mg + inner / mg, pw = bw * mg + inner % mg;
    const int plane = p * p;  // one (channel, frame) block of k
    int k = k0;
    const int end = k0 + count;
    while (k < end) {
        const int block = k / plane, c = block / a.temporal;
        const int iy = (k % plane) / p, ix = k % p;
        const int run = std::min(p - ix, end - k);  // contiguous pixels along x
        const std::uint8_t* src =
            a.rgb + ((std::ptrdiff_t(ph) * p + iy) * a.width + std::ptrdiff_t(pw) * p + ix) * 3 + c;
        for (int x = 0; x < run; ++x) out[k - k0 + x] = a.lut[src[3 * x]];
        k += run;
    }
}

GemmArgs gemm_args(const PatchEmbedArgs& a) {
    return {.m = patch_embed_n_patches(a),
            .n = a.out_dim,
            .k = patch_embed_k(a),
            .w = a.w,
            .ldw = a.ldw,
            .w_type = a.w_type,
            .bias = a.bias,
            .c = a.out,
            .ldc = a.ld_out,
            .precision = a.precision,
            .load_a = &load_pixels,
            .a_ctx = &a};
}

}  // namespace

int patch_embed_n_patches(const PatchEmbedArgs& a) {
    if (a.patch <= 0) return 0;
    return (a.height / a.patch) * (a.width / a.patch);
}

int patch_embed_k(const PatchEmbedArgs& a) { return 3 * a.temporal * a.patch * a.patch; }

int patch_embed_num_tasks(const PatchEmbedArgs& args, int n_threads) {
    return detail::problem_num_tasks(patch_embed_n_patches(args), args.out_dim, n_threads);
}

void KernelTable::patch_embed_task(const PatchEmbedArgs& args, int task, int num_tasks) const {
    detail::run_problem_task(gemm_args(args), task, num_tasks, gemm_kernels(args.precision));
}

void KernelTable::patch_embed(const PatchEmbedArgs& args) const {
    const int nt = patch_embed_num_tasks(args, 1);
    for (int t = 0; t < nt; ++t) patch_embed_task(args, t, nt);
}

}  // namespace qvl::kernels
