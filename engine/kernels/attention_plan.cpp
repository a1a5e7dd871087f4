#include "kernels/attention_plan.h"

#include <algorithm>
#include <cstdint>

#include "base/bf16.h"
#include "kernels/scratch.h"

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

AttentionArgs attention_widen_kv(const AttentionArgs& a, const AttentionTask& t) {
    if (a.kv_type != KvType::kBF16) return a;
    int n_keys = 0;
    for (int i = t.row_begin; i < t.row_end; ++i) {
        int lo, hi;
        attention_key_range(a, i, &lo, &hi);
        n_keys = std::max(n_keys, hi);
    }
    const std::size_t row_floats = std::size_t(std::max(0, a.head_dim));
    auto* k = static_cast<float*>(detail::thread_scratch(
        detail::kScratchAttentionKV, 2 * sizeof(float) * row_floats * std::size_t(n_keys) + 64));
    float* v = k + row_floats * std::size_t(n_keys);
    auto widen = [&](const void* src, std::ptrdiff_t row_stride, std::ptrdiff_t head_stride,
                     float* dst) {
        const auto* s = static_cast<const std::uint16_t*>(src) + t.kv_head * head_stride;
        for (int j = 0; j < n_keys; ++j) {
            for (std::size_t d = 0; d < row_floats; ++d) {
                dst[std::size_t(j) * row_floats + d] =
                    base::bf16_to_f32({s[j * row_stride + std::ptrdiff_t(d)]});
            }
        }
    };
    widen(a.k, a.k_row_stride, a.k_head_stride, k);
    widen(a.v, a.v_row_stride, a.v_head_stride, v);
    AttentionArgs w = a;
    w.kv_type = KvType::kF32;
    w.k = k;
    w.v = v;
    w.k_row_stride = w.v_row_stride = a.head_dim;
    w.k_head_stride = w.v_head_stride = 0;
    return w;
}

}  // namespace qvl::kernels
