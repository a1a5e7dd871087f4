// Scalar reference for kernels/attention.h: per (row, head), the visible keys' scores twice
// (max, then exp-weighted sum of V), everything in double. Quadratic and slow: the spec.
#include <cmath>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_plan.h"

namespace qvl::kernels::ref {

namespace {
double dot(const float* a, const float* b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += double(a[i]) * b[i];
    return s;
}
}  // namespace

void attention_run_task(const AttentionArgs& a, int task, int num_tasks) {
    AttentionTask t;
    if (!attention_task(a, task, num_tasks, &t)) return;
    const int group = a.n_heads / attention_kv_heads(a);
    const float* k = a.k + t.kv_head * a.k_head_stride;
    const float* v = a.v + t.kv_head * a.v_head_stride;
    std::vector<double> acc(a.head_dim);
    for (int i = t.row_begin; i < t.row_end; ++i) {
        int lo, hi;
        attention_key_range(a, i, &lo, &hi);
        for (int h = t.kv_head * group; h < (t.kv_head + 1) * group; ++h) {
            const float* q = a.q + i * a.q_row_stride + h * a.q_head_stride;
            float* out = a.out + i * a.out_row_stride + h * a.out_head_stride;
            double max = -INFINITY;
            for (int j = lo; j < hi; ++j) {
                max = std::fmax(max, a.scale * dot(q, k + j * a.k_row_stride, a.head_dim));
            }
            std::fill(acc.begin(), acc.end(), 0.0);
            double sum = 0.0;
            for (int j = lo; j < hi; ++j) {
                const double p =
                    std::exp(a.scale * dot(q, k + j * a.k_row_stride, a.head_dim) - max);
                sum += p;
                for (int d = 0; d < a.head_dim; ++d) acc[d] += p * v[j * a.v_row_stride + d];
            }
            for (int d = 0; d < a.head_dim; ++d) out[d] = hi > lo ? float(acc[d] / sum) : 0.0f;
        }
    }
}

}  // namespace qvl::kernels::ref
