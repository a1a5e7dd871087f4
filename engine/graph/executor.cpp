#include "graph/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/bf16.h"
#include "base/check.h"
#include "base/timer.h"
#include "kernels/scratch.h"

namespace qvl::graph {

std::string Profile::format() const {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (std::size_t i = 0; i < ms_by_op.size(); ++i) {
        if (calls_by_op[i] == 0) continue;
        total += ms_by_op[i];
        rows.emplace_back(ms_by_op[i],
                          fmt::format("{} ({} calls)", op_name(OpKind(i)), calls_by_op[i]));
    }
    std::sort(rows.rbegin(), rows.rend());
    std::string out = "qvl profile: time per op kind\n";
    char line[160];
    for (const auto& [ms, name] : rows) {
        std::snprintf(line, sizeof line, "  %-32s %10.2f ms %5.1f%%\n", name.c_str(), ms,
                      total > 0 ? 100.0 * ms / total : 0.0);
        out += line;
    }
    out += "qvl profile: time per layer\n";
    for (const auto& [layer, ms] : ms_by_layer) {
        std::snprintf(line, sizeof line, "  %-32s %10.2f ms\n", layer.c_str(), ms);
        out += line;
    }
    return out;
}

std::string Executor::full_name(const Node& n) {
    if (n.layer >= 0) return fmt::format("{}.{}.{}", n.scope, n.layer, n.name);
    if (*n.scope != '\0') return fmt::format("{}.{}", n.scope, n.name);
    return n.name;
}

float* Executor::data(const Graph& g, Tensor t, std::byte* arena) const {
    std::ptrdiff_t offset = 0;
    const int root = g.root_of(t.id, &offset);
    const TensorDesc& d = g.tensors[root];
    float* base = d.kind == TensorKind::kExternal
                      ? d.external
                      : reinterpret_cast<float*>(arena + d.arena_offset);
    return base + offset;
}

// Splits rows over the pool, but only when there is enough work to pay for waking workers
// (a few microseconds each; far more on a loaded machine): about 16K elements per task.
template <class Fn>
void Executor::parallel_rows(int rows, int cols, Fn&& fn) {
    constexpr std::int64_t kGrainElements = 16384;
    const std::int64_t by_work =
        std::max<std::int64_t>(1, std::int64_t(rows) * cols / kGrainElements);
    const int n_tasks = int(std::min<std::int64_t>({rows, 4 * pool_->size(), by_work}));
    pool_->parallel_for(n_tasks, [&](int task) {
        const int r0 = int(std::int64_t(rows) * task / n_tasks);
        const int r1 = int(std::int64_t(rows) * (task + 1) / n_tasks);
        if (r1 > r0) fn(r0, r1);
    });
}

void Executor::run(const Graph& g, std::byte* arena) {
    for (const Node& n : g.nodes) {
        if (!profile_on_) {
            run_node(g, n, arena);
        } else {
            const double t0 = base::now_ms();
            run_node(g, n, arena);
            const double ms = base::now_ms() - t0;
            profile_.ms_by_op[std::size_t(n.op)] += ms;
            profile_.calls_by_op[std::size_t(n.op)] += 1;
            const std::string layer =
                n.layer >= 0 ? fmt::format("{}.{}", n.scope, n.layer) : std::string(n.scope);
            profile_.ms_by_layer[layer] += ms;
        }
        if (observer_) {
            const TensorDesc& d = g.tensors[n.out.id];
            observer_(full_name(n), data(g, n.out, arena), d.rows, d.cols, d.stride);
        }
    }
    // Tasks go to whichever thread is free, so this run may have grown the kernel scratch on
    // one thread only; level all threads now so that the next run of a shape seen so far does
    // not allocate (a decode step must not), whichever thread draws which task.
    if (kernels::scratch_generation() != scratch_generation_) {
        pool_->run_on_each_thread([](int) { kernels::reserve_thread_scratch(); });
        scratch_generation_ = kernels::scratch_generation();
    }
}

void Executor::run_node(const Graph& g, const Node& n, std::byte* arena) {
    using namespace kernels;
    const NodeParams& p = n.p;
    const TensorDesc& od = g.tensors[n.out.id];
    float* out = data(g, n.out, arena);
    auto in = [&](int i) { return data(g, n.in[i], arena); };
    auto in_desc = [&](int i) -> const TensorDesc& { return g.tensors[n.in[i].id]; };

    switch (n.op) {
        case OpKind::kEmbed: {
            const int cols = od.cols;
            parallel_rows(od.rows, od.cols, [&](int r0, int r1) {
                for (int r = r0; r < r1; ++r) {
                    float* y = out + r * od.stride;
                    const std::ptrdiff_t row = std::ptrdiff_t(p.ids[r]) * p.w.ld;
                    if (p.w.type == WeightType::kBF16) {
                        const auto* src = static_cast<const base::bf16*>(p.w.data) + row;
                        for (int c = 0; c < cols; ++c) y[c] = base::bf16_to_f32(src[c]);
                    } else {
                        std::memcpy(y, static_cast<const float*>(p.w.data) + row,
                                    sizeof(float) * cols);
                    }
                }
            });
            break;
        }
        case OpKind::kPatchEmbed: {
            PatchEmbedArgs a{.rgb = p.rgb,
                             .height = p.image_height,
                             .width = p.image_width,
                             .patch = p.patch,
                             .temporal = p.temporal,
                             .merge = p.merge,
                             .lut = p.lut,
                             .w = p.w.data,
                             .w_type = p.w.type,
                             .ldw = p.w.ld,
                             .bias = p.bias,
                             .out = out,
                             .ld_out = od.stride,
                             .out_dim = od.cols,
                             .precision = p.precision};
            const int nt = patch_embed_num_tasks(a, pool_->size());
            pool_->parallel_for(nt, [&](int t) { table_->patch_embed_task(a, t, nt); });
            break;
        }
        case OpKind::kMatmul: {
            const TensorDesc& xd = in_desc(0);
            GemmArgs a{.m = xd.rows,
                       .n = p.w.rows,
                       .k = p.w.cols,
                       .a = in(0),
                       .lda = xd.stride,
                       .w = p.w.data,
                       .ldw = p.w.ld,
                       .w_type = p.w.type,
                       .bias = p.bias,
                       .act = p.act,
                       .c = out,
                       .ldc = od.stride,
                       .precision = p.precision};
            if (n.in[1].valid()) {
                a.residual = in(1);
                a.ldr = in_desc(1).stride;
            }
            const int nt = gemm_num_tasks(a, pool_->size());
            pool_->parallel_for(nt, [&](int t) { table_->gemm_task(a, t, nt); });
            break;
        }
        case OpKind::kMatmulGated: {
            const TensorDesc& xd = in_desc(0);
            GemmArgs a{.m = xd.rows,
                       .n = p.w.rows,
                       .k = p.w.cols,
                       .a = in(0),
                       .lda = xd.stride,
                       .w = p.w.data,
                       .w_up = p.w2.data,
                       .ldw = p.w.ld,
                       .w_type = p.w.type,
                       .c = out,
                       .ldc = od.stride,
                       .precision = p.precision};
            const int nt = gemm_num_tasks(a, pool_->size());
            pool_->parallel_for(nt, [&](int t) { table_->gemm_task(a, t, nt); });
            break;
        }
        case OpKind::kLayerNorm: {
            const TensorDesc& xd = in_desc(0);
            const float* x = in(0);
            parallel_rows(xd.rows, xd.cols, [&](int r0, int r1) {
                table_->layer_norm_f32({.x = x + r0 * xd.stride,
                                        .x_stride = xd.stride,
                                        .w = p.norm_w,
                                        .b = p.norm_b,
                                        .y = out + r0 * od.stride,
                                        .y_stride = od.stride,
                                        .rows = r1 - r0,
                                        .dim = xd.cols,
                                        .eps = p.eps});
            });
            break;
        }
        case OpKind::kRmsNorm: {
            const TensorDesc& xd = in_desc(0);
            const float* x = in(0);
            const int groups = xd.cols / p.group;
            if (groups == 1) {
                parallel_rows(xd.rows, xd.cols, [&](int r0, int r1) {
                    table_->rms_norm_f32({.x = x + r0 * xd.stride,
                                          .x_stride = xd.stride,
                                          .w = p.norm_w,
                                          .y = out + r0 * od.stride,
                                          .y_stride = od.stride,
                                          .rows = r1 - r0,
                                          .dim = p.group,
                                          .eps = p.eps});
                });
            } else {  // contiguous rows: each head is one row of `group` values
                parallel_rows(xd.rows * groups, p.group, [&](int r0, int r1) {
                    table_->rms_norm_f32({.x = x + std::ptrdiff_t(r0) * p.group,
                                          .x_stride = p.group,
                                          .w = p.norm_w,
                                          .y = out + std::ptrdiff_t(r0) * p.group,
                                          .y_stride = p.group,
                                          .rows = r1 - r0,
                                          .dim = p.group,
                                          .eps = p.eps});
                });
            }
            break;
        }
        case OpKind::kRope: {
            const TensorDesc& cd = in_desc(1);
            float* x = out;
            const float* cos = in(1);
            const float* sin = in(2);
            parallel_rows(od.rows, od.cols, [&](int r0, int r1) {
                table_->rope_f32({.x = x + r0 * od.stride,
                                  .x_stride = od.stride,
                                  .rows = r1 - r0,
                                  .n_heads = p.n_heads,
                                  .head_dim = p.head_dim,
                                  .cos = cos + r0 * cd.stride,
                                  .sin = sin + r0 * cd.stride,
                                  .cs_stride = cd.stride});
            });
            break;
        }
        case OpKind::kAttention: {
            const TensorDesc& qd = in_desc(0);
            AttentionArgs a{.n_q = qd.rows,
                            .n_kv = p.n_kv,
                            .n_heads = p.n_heads,
                            .n_kv_heads = p.n_kv_heads,
                            .head_dim = p.head_dim,
                            .q = in(0),
                            .q_row_stride = qd.stride,
                            .q_head_stride = p.head_dim,
                            .out = out,
                            .out_row_stride = od.stride,
                            .out_head_stride = p.head_dim,
                            .scale = p.scale,
                            .causal = p.causal,
                            .q_pos0 = p.pos0,
                            .segments = p.segments,
                            .n_segments = p.n_segments,
                            .round_bf16 = p.precision == GemmPrecision::kBF16};
            if (p.use_cache) {
                a.k = p.kv.k;
                a.v = p.kv.v;
                a.k_row_stride = a.v_row_stride = p.head_dim;
                a.k_head_stride = a.v_head_stride = p.kv.head_stride;
            } else {
                a.k = in(1);
                a.v = in(2);
                a.k_row_stride = in_desc(1).stride;
                a.v_row_stride = in_desc(2).stride;
                a.k_head_stride = a.v_head_stride = p.head_dim;
            }
            const int nt = attention_num_tasks(a, pool_->size());
            pool_->parallel_for(nt, [&](int t) { table_->attention_task(a, t, nt); });
            break;
        }
        case OpKind::kStoreKv: {
            const TensorDesc& kd = in_desc(0);
            const TensorDesc& vd = in_desc(1);
            const float* k = in(0);
            const float* v = in(1);
            const std::size_t row_bytes = sizeof(float) * p.head_dim;
            for (int r = 0; r < kd.rows; ++r) {
                for (int h = 0; h < p.n_kv_heads; ++h) {
                    const std::ptrdiff_t dst =
                        h * p.kv.head_stride + std::ptrdiff_t(p.pos0 + r) * p.head_dim;
                    std::memcpy(p.kv.k + dst, k + r * kd.stride + h * p.head_dim, row_bytes);
                    std::memcpy(p.kv.v + dst, v + r * vd.stride + h * p.head_dim, row_bytes);
                }
            }
            break;
        }
        case OpKind::kAdd: {
            const float* a = in(0);
            const float* b = in(1);
            const std::ptrdiff_t sa = in_desc(0).stride, sb = in_desc(1).stride;
            parallel_rows(od.rows, od.cols, [&](int r0, int r1) {
                for (int r = r0; r < r1; ++r) {
                    table_->add_f32(a + r * sa, b + r * sb, out + r * od.stride, od.cols);
                }
            });
            break;
        }
        case OpKind::kAddRows:
        case OpKind::kScatterRows: {
            const TensorDesc& sd = in_desc(1);
            const float* src = in(1);
            for (int r = 0; r < sd.rows; ++r) {
                float* y = out + std::ptrdiff_t(p.ids[r]) * od.stride;
                const float* s = src + r * sd.stride;
                if (n.op == OpKind::kAddRows) {
                    table_->add_f32(y, s, y, od.cols);
                } else {
                    std::memcpy(y, s, sizeof(float) * od.cols);
                }
            }
            break;
        }
        case OpKind::kCount:
            QVL_UNREACHABLE("bad op");
    }
}

}  // namespace qvl::graph
