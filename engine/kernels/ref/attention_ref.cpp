// Scalar reference for kernels/attention.h: per (row, head), the visible keys' scores twice
// (max, then exp-weighted sum of V), everything in double. Quadratic and slow: the spec.
// bf16 K/V are widened (exactly) into f32 rows first.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/bf16.h"
#include "kernels/attention.h"
#include "kernels/attention_plan.h"

namespace qvl::kernels::ref {

namespace {
double dot(const float* a, const float* b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += double(a[i]) * b[i];
    return s;
}

// Rows [0, n) of kv head g of K or V as f32 [n][head_dim] (bf16 widened; f32 copied).
std::vector<float> widen_rows(const AttentionArgs& a, const void* base, std::ptrdiff_t row_stride,
                              std::ptrdiff_t head_stride, int g, int n) {
    std::vector<float> rows(std::size_t(n) * a.head_dim);
    for (int j = 0; j < n; ++j) {
        const std::ptrdiff_t off = g * head_stride + j * row_stride;
        for (int d = 0; d < a.head_dim; ++d) {
            rows[std::size_t(j) * a.head_dim + d] =
                a.kv_type == KvType::kBF16
                    ? base::bf16_to_f32({static_cast<const std::uint16_t*>(base)[off + d]})
                    : static_cast<const float*>(base)[off + d];
        }
    }
    return rows;
}
}  // namespace

void attention_run_task(const AttentionArgs& a, int task, int num_tasks) {
    AttentionTask t;
    if (!attention_task(a, task, num_tasks, &t)) return;
    const int group = a.n_heads / attention_kv_heads(a);
    int n_keys = 0;
    for (int i = t.row_begin; i < t.row_end; ++i) {
        int lo, hi;
        attention_key_range(a, i, &lo, &hi);
        n_keys = std::max(n_keys, hi);
    }
    const std::vector<float> k_rows =
        widen_rows(a, a.k, a.k_row_stride, a.k_head_stride, t.kv_head, n_keys);
    const std::vector<float> v_rows =
        widen_rows(a, a.v, a.v_row_stride, a.v_head_stride, t.kv_head, n_keys);
    const float* k = k_rows.data();
    const float* v = v_rows.data();
    std::vector<double> acc(a.head_dim);
    for (int i = t.row_begin; i < t.row_end; ++i) {
        int lo, hi;
        attention_key_range(a, i, &lo, &hi);
        for (int h = t.kv_head * group; h < (t.kv_head + 1) * group; ++h) {
            const float* q = a.q + i * a.q_row_stride + h * a.q_head_stride;
            float* out = a.out + i * a.out_row_stride + h * a.out_head_stride;
            double max = -INFINITY;
            for (int j = lo; j < hi; ++j) {
                max = std::fmax(max, a.scale * dot(q, k + j * a.head_dim, a.head_dim));
            }
            std::fill(acc.begin(), acc.end(), 0.0);
            double sum = 0.0;
            for (int j = lo; j < hi; ++j) {
                const double p = std::exp(a.scale * dot(q, k + j * a.head_dim, a.head_dim) - max);
                sum += p;
                for (int d = 0; d < a.head_dim; ++d) acc[d] += p * v[j * a.head_dim + d];
            }
            for (int d = 0; d < a.head_dim; ++d) out[d] = hi > lo ? float(acc[d] / sum) : 0.0f;
        }
    }
}

}  // namespace qvl::kernels::ref
