#include "kernels/task_work.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "kernels/attention_plan.h"
#include "kernels/gemm_internal.h"

namespace qvl::kernels {
namespace {

double weight_bytes_per_value(const GemmArgs& a) {
    switch (a.w_type) {
        case WeightType::kF32:
            return 4;
        case WeightType::kQ8:
            return 1.0 + 4.0 / 64;  // int8 values and an f32 scale per block of (typically) 64
        case WeightType::kBF16:
        case WeightType::kBF16Panels:
            break;
    }
    return 2;
}

}  // namespace

int rows_num_tasks(int rows, int cols, int n_threads) {
    constexpr std::int64_t kGrainElements = 16384;
    const std::int64_t by_work =
        std::max<std::int64_t>(1, std::int64_t(rows) * cols / kGrainElements);
    return int(std::min<std::int64_t>({rows, 4 * std::int64_t(n_threads), by_work}));
}

void rows_task_range(int rows, int task, int n_tasks, int* r0, int* r1) {
    *r0 = int(std::int64_t(rows) * task / n_tasks);
    *r1 = int(std::int64_t(rows) * (task + 1) / n_tasks);
}

void rows_task_work(int rows, int cols, int n_threads, double bytes_per_row, double flops_per_row,
                    std::vector<base::TaskWork>* out) {
    const int n = rows_num_tasks(rows, cols, n_threads);
    for (int t = 0; t < n; ++t) {
        int r0 = 0, r1 = 0;
        rows_task_range(rows, t, n, &r0, &r1);
        out->push_back(
            {.flops = flops_per_row * (r1 - r0), .act_bytes = bytes_per_row * (r1 - r0)});
    }
}

void gemm_task_work(const KernelTable& table, const GemmArgs& args, int n_threads,
                    std::vector<base::TaskWork>* out) {
    const int nt = gemm_num_tasks(args, n_threads);
    const GemmKernels& tiles = table.gemm_kernels(args.precision);
    const double matrices = args.w_up != nullptr ? 2 : 1;
    const double per_weight = weight_bytes_per_value(args);
    for (int t = 0; t < nt; ++t) {
        detail::TaskRect r;
        if (!detail::problem_task_rect(args, t, nt, tiles, &r)) {
            out->push_back({});
            continue;
        }
        const double rows = r.m1 - r.m0, cols = r.n1 - r.n0;
        out->push_back({.flops = 2 * matrices * rows * cols * args.k,
                        .weight_bytes = matrices * cols * args.k * per_weight,
                        .act_bytes = 4 * rows * (double(args.k) + cols)});
    }
}

void attention_task_work(const AttentionArgs& a, int n_threads, std::vector<base::TaskWork>* out) {
    const int nt = attention_num_tasks(a, n_threads);
    const int group = std::max(1, a.n_heads / std::max(1, attention_kv_heads(a)));
    const double kv_elem = double(kv_type_bytes(a.kv_type));
    for (int t = 0; t < nt; ++t) {
        AttentionTask task;
        if (!attention_task(a, t, nt, &task)) {
            out->push_back({});
            continue;
        }
        double pairs = 0;  // (row, key) pairs of one head
        int max_hi = 0;
        for (int i = task.row_begin; i < task.row_end; ++i) {
            int lo = 0, hi = 0;
            attention_key_range(a, i, &lo, &hi);
            pairs += hi - lo;
            max_hi = std::max(max_hi, hi);
        }
        const double rows = task.row_end - task.row_begin;
        // Scores and the weighted sum: 2 multiply-adds per (head, row, key, dim).
        const double kv = 2.0 * max_hi * a.head_dim * kv_elem;
        base::TaskWork w{.flops = 4.0 * group * pairs * a.head_dim,
                         .act_bytes = 8.0 * rows * group * a.head_dim};
        // Keys and values from the KV cache come from memory; a vision tower's are activations.
        (a.incremental ? w.kv_bytes : w.act_bytes) += kv;
        out->push_back(w);
    }
}

void trace_gemm(const KernelTable& table, const GemmArgs& args) {
    base::TaskTrace* trace = base::TaskTrace::active();
    if (trace == nullptr) return;
    struct Ctx {
        const KernelTable* table;
        const GemmArgs* args;
    } ctx{&table, &args};
    trace->describe_next(
        fmt::format("gemm m={} n={} k={} w={} p={} gated={}", args.m, args.n, args.k,
                    int(args.w_type), int(args.precision), args.w_up != nullptr),
        [](const void* c, int t, std::vector<base::TaskWork>* out) {
            const auto* x = static_cast<const Ctx*>(c);
            gemm_task_work(*x->table, *x->args, t, out);
        },
        &ctx);
}

void trace_gemm_pack_a(const GemmArgs& args) {
    base::TaskTrace* trace = base::TaskTrace::active();
    if (trace == nullptr) return;
    trace->describe_next(
        fmt::format("pack_a m={} k={}", args.m, args.k),
        [](const void* c, int t, std::vector<base::TaskWork>* out) {
            const auto* a = static_cast<const GemmArgs*>(c);
            const int np = gemm_pack_a_num_tasks(*a, t);
            for (int i = 0; i < np; ++i) {
                int r0 = 0, r1 = 0;
                rows_task_range(a->m, i, np, &r0, &r1);
                out->push_back({.act_bytes = 8.0 * (r1 - r0) * a->k});
            }
        },
        &args);
}

void trace_attention(const AttentionArgs& args) {
    base::TaskTrace* trace = base::TaskTrace::active();
    if (trace == nullptr) return;
    trace->describe_next(
        fmt::format("attention q={} kv={} h={}/{} d={} causal={} pos0={} cache={} kvt={}", args.n_q,
                    args.n_kv, args.n_heads, args.n_kv_heads, args.head_dim, args.causal,
                    args.q_pos0, args.incremental, int(args.kv_type)),
        [](const void* c, int t, std::vector<base::TaskWork>* out) {
            attention_task_work(*static_cast<const AttentionArgs*>(c), t, out);
        },
        &args);
}

void trace_rows(const char* what, int rows, int cols, double bytes_per_row, double flops_per_row) {
    base::TaskTrace* trace = base::TaskTrace::active();
    if (trace == nullptr) return;
    struct Ctx {
        int rows, cols;
        double bytes, flops;
    } ctx{rows, cols, bytes_per_row, flops_per_row};
    trace->describe_next(
        fmt::format("rows {} r={} c={}", what, rows, cols),
        [](const void* c, int t, std::vector<base::TaskWork>* out) {
            const auto* x = static_cast<const Ctx*>(c);
            rows_task_work(x->rows, x->cols, t, x->bytes, x->flops, out);
        },
        &ctx);
}

}  // namespace qvl::kernels
