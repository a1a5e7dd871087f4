// Internal to kernels/: how attention work is cut into tasks, shared by the reference and the
// SIMD kernels so that every Isa computes the same rows in the same task. Defined out of line
// in attention_plan.cpp (baseline flags): an inline copy compiled into an AVX-512 translation
// unit could be the one the linker keeps for every caller, and fault on an AVX2-only CPU.
#pragma once

#include "kernels/attention.h"

namespace qvl::kernels {

struct AttentionTask {
    int kv_head = 0;    // the task covers every query head of this kv head's group
    int row_begin = 0;  // query rows [row_begin, row_end)
    int row_end = 0;
};

int attention_kv_heads(const AttentionArgs& a);

// Query rows per block are a multiple of this, so SIMD blocks of 32 (head, row) items fill up.
int attention_row_granule(const AttentionArgs& a);

// Task t covers kv head t / n_blocks and query block n_blocks - 1 - t % n_blocks: tasks of one
// head are adjacent (a thread picking up consecutive tasks finds that head's K/V in its cache)
// and within a head the highest (for causal: the most expensive) blocks come first. False for
// an empty task.
bool attention_task(const AttentionArgs& a, int task, int num_tasks, AttentionTask* out);

// Keys [*lo, *hi) visible to query row i (see attention.h). Kernels group rows by a shared lo
// (always 0 today: every row sees a prefix of the keys).
void attention_key_range(const AttentionArgs& a, int i, int* lo, int* hi);

}  // namespace qvl::kernels
