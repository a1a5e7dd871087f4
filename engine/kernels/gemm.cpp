// GEMM front end: the thread-free task split, the KernelTable's GEMM members, the shared scalar
// epilogue. The per-thread packing scratch is kernels/scratch.h. The arithmetic lives in
// kernels/x86/gemm_*.cpp (and the scalar tier in kernels/gemm_scalar.cpp).
#include "kernels/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/check.h"
#include "kernels/gemm_internal.h"
#include "kernels/gemm_q8_internal.h"

namespace qvl::kernels {
namespace {

// Column tasks are multiples of 64 (a multiple of every NR). Row tasks have at least
// kMinTaskRows rows (each packs its own B panels), rounded up to whole row panels of the tier
// that runs them (its mr), so that every task starts on a row panel of a shared packed A.
constexpr int kColQuantum = 64;
constexpr int kMinTaskRows = 42;

struct Grid {
    int row_blocks = 1, col_blocks = 1;
    int rows_per = 1, cols_per = 1;
};

int ceil_div(int a, int b) { return (a + b - 1) / b; }
int round_up(int a, int q) { return ceil_div(a, q) * q; }

// The split of an m x n output into at most `tasks` rectangles; a pure function of its inputs,
// so every task of one call agrees on it whatever thread runs it. The number of rectangles does
// not depend on `align` (the tier's mr), so it is counted without knowing the tier; rounding
// the rows to `align` may leave the last row block empty (its tasks do nothing).
Grid make_grid(int m, int n, int tasks, int align) {
    Grid g;
    tasks = std::max(tasks, 1);
    const int max_col_blocks = std::max(ceil_div(n, kColQuantum), 1);
    if (m <= detail::kGemvMaxM) {
        // The streaming path reads each weight once; columns are the only split.
        g.col_blocks = std::min(max_col_blocks, tasks);
    } else {
        // Each row block packs its own W columns and each column block its own A rows: among
        // the grids with the most tasks (up to `tasks`), take the one with the least packing.
        const int max_row_blocks = std::max(ceil_div(m, kMinTaskRows), 1);
        long best_cost = -1;
        int best_tasks = 0;
        for (int rb = 1; rb <= std::min(max_row_blocks, tasks); ++rb) {
            const int cb = std::min(max_col_blocks, tasks / rb);
            const long cost = long(cb) * m + long(rb) * n;
            if (rb * cb > best_tasks || (rb * cb == best_tasks && cost < best_cost)) {
                best_tasks = rb * cb;
                best_cost = cost;
                g.row_blocks = rb;
                g.col_blocks = cb;
            }
        }
    }
    g.rows_per =
        m <= detail::kGemvMaxM ? std::max(m, 1) : round_up(ceil_div(m, g.row_blocks), align);
    g.cols_per = round_up(ceil_div(std::max(n, 1), g.col_blocks), kColQuantum);
    g.col_blocks = std::max(ceil_div(n, g.cols_per), 1);
    return g;
}

// Task rows of the tiles: whole row panels of their micro-kernel (1 for the scalar loops).
int row_align(const GemmKernels& t) { return std::max(t.blocking.mr, 1); }

}  // namespace

namespace detail {

int problem_num_tasks(int m, int n, int n_threads) {
    if (m <= 0 || n <= 0 || n_threads <= 1) return 1;
    // A few tasks per thread even out a shared machine's noise; GEMV more (its tasks are cheap
    // to split), GEMM fewer (each task packs its own panels).
    const int want = (m <= detail::kGemvMaxM ? 4 : 2) * n_threads;
    const Grid g = make_grid(m, n, want, 1);
    return g.row_blocks * g.col_blocks;
}

// The tiles that serve p: bf16 products leave vdpbf16ps for the avx512 tier's f32 FMAs (same
// bf16-rounded operands) on CPUs where the dot product is the slower of the two (isa.h); for
// every m alike, so the streaming and packed paths keep one arithmetic.
const GemmKernels& resolve_tiles(const GemmArgs& p, const GemmKernels& tiles) {
    if (p.round_bf16() && tiles.isa == Isa::kAvx512Bf16 && !bf16_dot_for_gemm()) {
        return kernels_for(Isa::kAvx512).gemm_f32;
    }
    return tiles;
}

bool problem_task_rect(const GemmArgs& p, int task, int num_tasks, const GemmKernels& tiles,
                       TaskRect* r) {
    if (p.m <= 0 || p.n <= 0) return false;
    const Grid g = make_grid(p.m, p.n, num_tasks, row_align(resolve_tiles(p, tiles)));
    if (task < 0 || task >= g.row_blocks * g.col_blocks) return false;
    const int rb = task / g.col_blocks;
    const int cb = task % g.col_blocks;
    r->m0 = rb * g.rows_per;
    r->m1 = std::min(p.m, r->m0 + g.rows_per);
    r->n0 = cb * g.cols_per;
    r->n1 = std::min(p.n, r->n0 + g.cols_per);
    return r->m0 < r->m1 && r->n0 < r->n1;
}

void run_problem_task(const GemmArgs& problem, int task, int num_tasks, const GemmKernels& tiles) {
    const GemmArgs& p = problem;
    TaskRect rect;
    if (!problem_task_rect(p, task, num_tasks, tiles, &rect)) return;
    const GemmKernels& t = resolve_tiles(p, tiles);
    const auto [m0, m1, n0, n1] = rect;
    if (p.k <= 0) {
        // No products: the epilogue alone, over one zero row shared by every output row.
        float* zeros = static_cast<float*>(
            detail::thread_scratch(detail::kScratchC, sizeof(float) * std::size_t(n1 - n0)));
        std::fill(zeros, zeros + (n1 - n0), 0.0f);
        detail::gemm_epilogue(p, zeros, zeros, 0, m0, m1, n0, n1);
        return;
    }
    if (p.w_type == WeightType::kQ8) return detail::gemm_q8_tile(p, m0, m1, n0, n1, tiles.isa);
    if (p.m > detail::kGemvMaxM) return t.gemm_tile(p, m0, m1, n0, n1);
    if (p.packed_a == nullptr) return t.gemv_tile(p, m0, m1, n0, n1);
    // The streaming path packs nothing; a shared A (never offered for these m) is ignored.
    GemmArgs q = p;
    q.packed_a = nullptr;
    t.gemv_tile(q, m0, m1, n0, n1);
}

std::size_t shared_a_bytes(const GemmArgs& p, int num_tasks, const GemmKernels& tiles) {
    if (p.m <= detail::kGemvMaxM || p.n <= 0 || p.k <= 0) return 0;
    const GemmKernels& t = resolve_tiles(p, tiles);
    if (make_grid(p.m, p.n, num_tasks, row_align(t)).col_blocks < 2) return 0;  // nothing to share
    // int8 weights share their quantized activation rows instead (gemm_q8_internal.h).
    if (p.w_type == WeightType::kQ8) return gemm_q8_shared_a_bytes(p);
    return t.packed_a_bytes != nullptr && t.pack_a != nullptr ? t.packed_a_bytes(p) : 0;
}

void pack_a_task(const GemmArgs& p, int task, int num_tasks, const GemmKernels& tiles) {
    const GemmKernels& t = resolve_tiles(p, tiles);
    const bool q8 = p.w_type == WeightType::kQ8;
    if (p.packed_a == nullptr || (t.pack_a == nullptr && !q8) || num_tasks < 1) return;
    const int rows_per = round_up(ceil_div(p.m, num_tasks), row_align(t));
    const int m0 = task * rows_per;
    const int m1 = std::min(p.m, m0 + rows_per);
    if (task < 0 || m0 >= m1) return;
    if (q8) return gemm_q8_quantize_a(p, m0, m1, tiles.isa);
    t.pack_a(p, m0, m1);
}

}  // namespace detail

float gemm_activation_ref(GemmActivation act, float u) {
    const double x = u;
    switch (act) {
        case GemmActivation::kNone:
            return u;
        case GemmActivation::kGeluTanh: {
            const double kSqrt2OverPi = 0.79788456080286535588;
            return float(0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x))));
        }
        case GemmActivation::kGeluErf:
            return float(0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440)));
        case GemmActivation::kSilu:
            return float(x / (1.0 + std::exp(-x)));
    }
    return u;
}

int gemm_num_tasks(const GemmArgs& args, int n_threads) {
    return detail::problem_num_tasks(args.m, args.n, n_threads);
}

int gemm_pack_a_num_tasks(const GemmArgs& args, int n_threads) {
    // Row shares of at least kMinTaskRows rows, a couple per thread.
    return std::clamp(ceil_div(args.m, kMinTaskRows), 1, 2 * std::max(n_threads, 1));
}

std::size_t KernelTable::gemm_shared_a_bytes(const GemmArgs& args, int num_tasks) const {
    return detail::shared_a_bytes(args, num_tasks, gemm_kernels(args.precision));
}

void KernelTable::gemm_pack_a_task(const GemmArgs& args, int task, int num_tasks) const {
    detail::pack_a_task(args, task, num_tasks, gemm_kernels(args.precision));
}

void KernelTable::gemm_task(const GemmArgs& args, int task, int num_tasks) const {
    detail::run_problem_task(args, task, num_tasks, gemm_kernels(args.precision));
}

void KernelTable::gemm(const GemmArgs& args) const {
    const int nt = gemm_num_tasks(args, 1);
    for (int t = 0; t < nt; ++t) gemm_task(args, t, nt);
}

namespace detail {

void gemm_epilogue(const GemmArgs& p, const float* acc, const float* acc2, std::ptrdiff_t ld_acc,
                   int m0, int m1, int n0, int n1) {
    for (int i = m0; i < m1; ++i) {
        const float* s = acc + std::ptrdiff_t(i - m0) * ld_acc;
        float* c = p.c + std::ptrdiff_t(i) * p.ldc;
        if (p.w_up != nullptr) {
            const float* u = acc2 + std::ptrdiff_t(i - m0) * ld_acc;
            for (int j = n0; j < n1; ++j) {
                c[j] = gemm_activation_ref(GemmActivation::kSilu, s[j - n0]) * u[j - n0];
            }
            continue;
        }
        const float* r = p.residual != nullptr ? p.residual + std::ptrdiff_t(i) * p.ldr : nullptr;
        for (int j = n0; j < n1; ++j) {
            float v = s[j - n0];
            if (p.bias != nullptr) v += p.bias[j];
            v = gemm_activation_ref(p.act, v);
            if (r != nullptr) v += r[j];
            c[j] = v;
        }
    }
}

void gemm_a_rows(const GemmArgs& p, int row0, int n, int p0, int kc, const float** src) {
    if (p.load_a == nullptr) {
        for (int i = 0; i < n; ++i) src[i] = p.a + std::ptrdiff_t(row0 + i) * p.lda + p0;
        return;
    }
    auto* rows = static_cast<float*>(thread_scratch(
        kScratchGather, sizeof(float) * std::size_t(std::max(n, 1)) * std::size_t(kc)));
    for (int i = 0; i < n; ++i) {
        float* dst = rows + std::ptrdiff_t(i) * kc;
        p.load_a(p.a_ctx, row0 + i, p0, kc, dst);
        src[i] = dst;
    }
}

}  // namespace detail
}  // namespace qvl::kernels
