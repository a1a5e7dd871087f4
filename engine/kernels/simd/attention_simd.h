// Portable attention (kernels/attention.h) over xsimd batches: one (row, head) at a time,
// keys in chunks with an online softmax, dot products along head_dim. Simpler and slower than
// the flash kernels (x86/attention_avx512.cpp, x86/attention_avx2.cpp); it serves the head
// dimensions they do not handle. Included only from ISA translation units.
#pragma once

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/attention_plan.h"
#include "kernels/simd/simd_util.h"

namespace qvl::kernels::simd {

// s[r] = sum_i a[i] * b[r * b_stride + i] for r < R: R independent FMA chains hide latency.
template <class Arch, int R>
void dots_f32(const float* a, const float* b, std::ptrdiff_t b_stride, int n, float* s) {
    using V = Vf<Arch>;
    constexpr int L = kLanes<Arch>;
    V acc[R];
    for (int r = 0; r < R; ++r) acc[r] = V(0.0f);
    int i = 0;
    for (; i + L <= n; i += L) {
        const V av = V::load_unaligned(a + i);
        for (int r = 0; r < R; ++r) {
            acc[r] = xsimd::fma(av, V::load_unaligned(b + r * b_stride + i), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) {
        float t = xsimd::hadd(acc[r]);
        for (int k = i; k < n; ++k) t += a[k] * b[r * b_stride + k];
        s[r] = t;
    }
}

// o[i] = o[i] * alpha + sum_j p[j] * v[j * v_stride + i] for i < n: blocks of up to 8
// vectors of o stay in registers while the keys stream by.
template <class Arch>
void scale_accumulate(float* o, float alpha, const float* p, const float* v,
                      std::ptrdiff_t v_stride, int n_keys, int n) {
    using V = Vf<Arch>;
    constexpr int L = kLanes<Arch>;
    constexpr int kBlock = 8;
    int i = 0;
    for (; i + L <= n; i += kBlock * L) {
        const int nv = std::min(kBlock, (n - i) / L);
        V acc[kBlock];
        for (int b = 0; b < nv; ++b) acc[b] = V::load_unaligned(o + i + b * L) * V(alpha);
        for (int j = 0; j < n_keys; ++j) {
            const float* vj = v + j * v_stride + i;
            __builtin_prefetch(vj + 8 * v_stride);
            const V pj(p[j]);
            for (int b = 0; b < nv; ++b)
                acc[b] = xsimd::fma(pj, V::load_unaligned(vj + b * L), acc[b]);
        }
        for (int b = 0; b < nv; ++b) acc[b].store_unaligned(o + i + b * L);
        if (nv < kBlock) {
            i += nv * L;
            break;
        }
    }
    for (; i < n; ++i) {
        float acc = o[i] * alpha;
        for (int j = 0; j < n_keys; ++j) acc += p[j] * v[j * v_stride + i];
        o[i] = acc;
    }
}

// out = softmax(scale q . k_j) v over keys [lo, hi) of one kv head; hi > lo; head_dim <= 512.
template <class Arch>
void attention_row(const AttentionArgs& a, const float* q, const float* k, const float* v, int lo,
                   int hi, float* out) {
    constexpr int kChunk = 64;
    const int hd = a.head_dim;
    float o[512];
    float s[kChunk];
    std::fill(o, o + hd, 0.0f);
    float m = -INFINITY, l = 0.0f;
    for (int j0 = lo; j0 < hi; j0 += kChunk) {
        const int n = std::min(kChunk, hi - j0);
        const float* kc = k + j0 * a.k_row_stride;
        int j = 0;
        for (; j + 4 <= n; j += 4) {
            // Rows of the vision qkv output are pages apart: prefetchers do not follow them.
            for (int r = 0; r < 4; ++r) {
                for (int c = 0; c < hd; c += 16) {
                    __builtin_prefetch(kc + (j + r + 8) * a.k_row_stride + c);
                }
            }
            dots_f32<Arch, 4>(q, kc + j * a.k_row_stride, a.k_row_stride, hd, s + j);
        }
        for (; j < n; ++j) dots_f32<Arch, 1>(q, kc + j * a.k_row_stride, a.k_row_stride, hd, s + j);
        float mx = m;
        for (j = 0; j < n; ++j) mx = std::max(mx, s[j] *= a.scale);
        const float alpha = std::exp(m - mx);  // m = -inf: 0
        float sum = 0.0f;
        j = 0;
        using V = Vf<Arch>;
        constexpr int L = kLanes<Arch>;
        for (; j + L <= n; j += L) {
            const V p = xsimd::exp(V::load_unaligned(s + j) - V(mx));
            p.store_unaligned(s + j);
            sum += xsimd::hadd(p);
        }
        if (j < n) {
            const V p = xsimd::exp(load_partial<Arch>(s + j, n - j, -INFINITY) - V(mx));
            store_partial<Arch>(s + j, n - j, p);
            sum += xsimd::hadd(p);
        }
        l = l * alpha + sum;
        m = mx;
        scale_accumulate<Arch>(o, alpha, s, v + j0 * a.v_row_stride, a.v_row_stride, n, hd);
    }
    const float inv = 1.0f / l;
    for (int i = 0; i < hd; ++i) out[i] = o[i] * inv;
}

template <class Arch>
void attention_run_task(const AttentionArgs& args, int task, int num_tasks) {
    if (args.head_dim > 512) return ref::attention_run_task(args, task, num_tasks);
    AttentionTask t;
    if (!attention_task(args, task, num_tasks, &t)) return;
    const AttentionArgs a = attention_widen_kv(args, t);  // bf16 K/V: f32 copies of this task's
    const int group = a.n_heads / attention_kv_heads(a);
    const float* k = static_cast<const float*>(a.k) + t.kv_head * a.k_head_stride;
    const float* v = static_cast<const float*>(a.v) + t.kv_head * a.v_head_stride;
    for (int i = t.row_begin; i < t.row_end; ++i) {
        int lo, hi;
        attention_key_range(a, i, &lo, &hi);
        for (int h = t.kv_head * group; h < (t.kv_head + 1) * group; ++h) {
            const float* q = a.q + i * a.q_row_stride + h * a.q_head_stride;
            float* out = a.out + i * a.out_row_stride + h * a.out_head_stride;
            if (hi <= lo) {
                std::fill(out, out + a.head_dim, 0.0f);
            } else {
                attention_row<Arch>(a, q, k, v, lo, hi, out);
            }
        }
    }
}

}  // namespace qvl::kernels::simd
