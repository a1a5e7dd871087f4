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

// For kernels without bf16 K/V loads of their own (the portable one): the arguments of the same
// problem reading, for task t, the keys and values it needs (kv head t.kv_head, keys below the
// task's last visible one) widened to f32 in this thread's kScratchAttentionKV buffer. Head
// strides are 0, so every kv head maps onto that copy: only task t may run with the result.
// The values are exactly the bf16 ones, so the kernel computes what it would on f32 K/V holding
// them. f32 arguments come back unchanged.
AttentionArgs attention_widen_kv(const AttentionArgs& a, const AttentionTask& t);

}  // namespace qvl::kernels
