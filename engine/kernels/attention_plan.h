// Internal to kernels/: how attention work is cut into tasks, shared by the reference and the
// SIMD kernels so that every Isa computes the same rows in the same task.
#pragma once

#include <algorithm>

#include "kernels/attention.h"

namespace qvl::kernels {

struct AttentionTask {
    int kv_head = 0;    // the task covers every query head of this kv head's group
    int row_begin = 0;  // query rows [row_begin, row_end)
    int row_end = 0;
};

inline int attention_kv_heads(const AttentionArgs& a) {
    return a.n_kv_heads > 0 ? a.n_kv_heads : a.n_heads;
}

// Query rows per block are a multiple of this, so SIMD blocks of 32 (head, row) items fill up.
inline int attention_row_granule(const AttentionArgs& a) {
    const int group = std::max(1, a.n_heads / attention_kv_heads(a));
    return std::max(1, 32 / group);
}

// Task t covers kv head t / n_blocks and query block n_blocks - 1 - t % n_blocks: tasks of one
// head are adjacent (a thread picking up consecutive tasks finds that head's K/V in its cache)
// and within a head the highest (for causal: the most expensive) blocks come first. False for
// an empty task.
inline bool attention_task(const AttentionArgs& a, int task, int num_tasks, AttentionTask* out) {
    const int n_kvh = attention_kv_heads(a);
    if (n_kvh <= 0 || a.n_q <= 0) return false;
    const int n_blocks = std::max(1, num_tasks / n_kvh);
    if (task < 0 || task >= n_blocks * n_kvh) return false;
    const int granule = attention_row_granule(a);
    int rows_per = (a.n_q + n_blocks - 1) / n_blocks;
    rows_per = (rows_per + granule - 1) / granule * granule;
    const int block = n_blocks - 1 - task % n_blocks;
    out->kv_head = task / n_blocks;
    out->row_begin = block * rows_per;
    out->row_end = std::min(a.n_q, out->row_begin + rows_per);
    return out->row_begin < out->row_end;
}

// Keys [*lo, *hi) visible to query row i (see attention.h). seg_hint: a segment index to start
// the search from (rows are visited in order), updated.
inline void attention_key_range(const AttentionArgs& a, int i, int* seg_hint, int* lo, int* hi) {
    *lo = 0;
    *hi = a.n_kv;
    if (a.segments != nullptr && a.n_segments > 0) {
        int s = std::clamp(*seg_hint, 0, a.n_segments - 1);
        while (s > 0 && i < a.segments[s]) --s;
        while (s + 1 < a.n_segments && i >= a.segments[s + 1]) ++s;
        *seg_hint = s;
        if (i < a.segments[s] || i >= a.segments[s + 1]) {
            *hi = 0;  // row outside every segment sees nothing
            return;
        }
        *lo = a.segments[s];
        *hi = std::min(*hi, int(a.segments[s + 1]));
    }
    if (a.causal) *hi = std::min(*hi, a.q_pos0 + i + 1);
    *lo = std::max(*lo, 0);
    if (*hi < *lo) *hi = *lo;
}

}  // namespace qvl::kernels
