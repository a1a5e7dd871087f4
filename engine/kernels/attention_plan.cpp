#include "kernels/attention_plan.h"

#include <algorithm>

namespace qvl::kernels {

int attention_kv_heads(const AttentionArgs& a) {
    return a.n_kv_heads > 0 ? a.n_kv_heads : a.n_heads;
}

int attention_row_granule(const AttentionArgs& a) {
    const int group = std::max(1, a.n_heads / attention_kv_heads(a));
    return std::max(1, 32 / group);
}

bool attention_task(const AttentionArgs& a, int task, int num_tasks, AttentionTask* out) {
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

void attention_key_range(const AttentionArgs& a, int i, int* lo, int* hi) {
    *lo = 0;
    *hi = a.causal ? std::min(a.n_kv, a.q_pos0 + i + 1) : a.n_kv;
    if (*hi < *lo) *hi = *lo;
}

}  // namespace qvl::kernels
