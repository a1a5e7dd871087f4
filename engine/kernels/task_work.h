// The work of each task of a split, for the scaling trace (base/task_trace.h): what the task
// split code of the kernels and of the executor would hand each task for any thread count,
// computed without running anything. Each function cuts with the very code its kernel or op
// runs with (the GEMM grid, attention_task, the executor's row split), so the simulator cannot
// diverge from the engine.
#pragma once

#include <vector>

#include "base/task_trace.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels {

// The executor's split of row-wise ops (norms, adds, RoPE, embedding): about 16K elements per
// task, at most 4 per thread, at most one per row.
int rows_num_tasks(int rows, int cols, int n_threads);
// Rows [*r0, *r1) of task t of n (may be empty).
void rows_task_range(int rows, int task, int n_tasks, int* r0, int* r1);

// Tasks of gemm_num_tasks(args, n_threads) (GemmRunner's main job) with their FLOPs and bytes.
void gemm_task_work(const KernelTable& table, const GemmArgs& args, int n_threads,
                    std::vector<base::TaskWork>* out);
// Tasks of attention_num_tasks(args, n_threads).
void attention_task_work(const AttentionArgs& args, int n_threads,
                         std::vector<base::TaskWork>* out);
// Tasks of rows_num_tasks(rows, cols, n_threads), each row reading and writing `bytes_per_row`
// of activations and doing `flops_per_row`.
void rows_task_work(int rows, int cols, int n_threads, double bytes_per_row, double flops_per_row,
                    std::vector<base::TaskWork>* out);

// Describe the next parallel_for of the calling thread to the active trace (no-op without one).
void trace_gemm(const KernelTable& table, const GemmArgs& args);
void trace_gemm_pack_a(const GemmArgs& args);
void trace_attention(const AttentionArgs& args);
void trace_rows(const char* what, int rows, int cols, double bytes_per_row, double flops_per_row);

}  // namespace qvl::kernels
