#include "graph/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <variant>
#include <vector>

#include "base/bf16.h"
#include "base/check.h"
#include "base/timer.h"
#include "graph/decode_row.h"
#include "kernels/scratch.h"
#include "kernels/task_work.h"

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
    // The slowest nodes, each summed over the layers that repeat it: where a phase's time goes.
    std::vector<std::pair<double, std::string>> nodes;
    for (const auto& [name, ms] : ms_by_node) nodes.emplace_back(ms, name);
    std::sort(nodes.rbegin(), nodes.rend());
    constexpr std::size_t kTopNodes = 30;
    if (nodes.size() > kTopNodes) nodes.resize(kTopNodes);
    out += "qvl profile: slowest nodes (summed over layers)\n";
    for (const auto& [ms, name] : nodes) {
        std::snprintf(line, sizeof line, "  %-40s %10.2f ms %5.1f%%\n", name.c_str(), ms,
                      total > 0 ? 100.0 * ms / total : 0.0);
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

namespace {

using namespace kernels;

// What one op's function sees: its node, the addresses of its tensors, the kernels and the pool.
struct OpRun {
    const Executor& exec;
    const Graph& g;
    const Node& n;
    std::byte* arena;
    const KernelTable& k;
    base::ThreadPool& pool;
    GemmRunner& gemm_runner;

    float* out() const { return exec.data(g, n.out, arena); }
    const TensorDesc& out_desc() const { return g.tensors[n.out.id]; }
    float* in(int i) const { return exec.data(g, n.in[i], arena); }
    const TensorDesc& in_desc(int i) const { return g.tensors[n.in[i].id]; }

    // Splits rows over the pool, but only when there is enough work to pay for waking workers
    // (a few microseconds each; far more on a loaded machine): about 16K elements per task.
    // The split is kernels::rows_num_tasks, which the scaling trace uses too.
    template <class Fn>
    void parallel_rows(int rows, int cols, Fn&& fn) const {
        const int n_tasks = rows_num_tasks(rows, cols, pool.size());
        // Each element read and written once, a few operations on it.
        trace_rows(op_name(n.op), rows, cols, 8.0 * cols, 4.0 * cols);
        pool.parallel_for(n_tasks, [&](int task) {
            int r0 = 0, r1 = 0;
            rows_task_range(rows, task, n_tasks, &r0, &r1);
            if (r1 > r0) fn(r0, r1);
        });
    }

    void gemm(const GemmArgs& a) const { gemm_runner.run(k, a, pool); }
};

void run_op(const OpRun& r, const op::Embed& p) {
    const TensorDesc& od = r.out_desc();
    float* out = r.out();
    r.parallel_rows(od.rows, od.cols, [&](int r0, int r1) {
        for (int i = r0; i < r1; ++i) {
            float* y = out + i * od.stride;
            const std::ptrdiff_t row = std::ptrdiff_t(p.ids[i]) * p.table.ld;
            if (p.table.type == WeightType::kBF16) {
                const auto* src = static_cast<const base::bf16*>(p.table.data) + row;
                for (int c = 0; c < od.cols; ++c) y[c] = base::bf16_to_f32(src[c]);
            } else {
                std::memcpy(y, static_cast<const float*>(p.table.data) + row,
                            sizeof(float) * od.cols);
            }
        }
    });
}

void run_op(const OpRun& r, const op::PatchEmbed& p) {
    const PatchEmbedArgs a{.rgb = p.rgb,
                           .height = p.height,
                           .width = p.width,
                           .patch = p.patch,
                           .temporal = p.temporal,
                           .merge = p.merge,
                           .lut = p.lut,
                           .w = p.w.data,
                           .w_type = p.w.type,
                           .ldw = p.w.ld,
                           .bias = p.bias,
                           .out = r.out(),
                           .ld_out = r.out_desc().stride,
                           .out_dim = r.out_desc().cols,
                           .precision = p.precision};
    const int nt = patch_embed_num_tasks(a, r.pool.size());
    // The same split as a GEMM of the patches (kernels/patch_embed.cpp).
    trace_gemm(r.k, {.m = patch_embed_n_patches(a),
                     .n = a.out_dim,
                     .k = patch_embed_k(a),
                     .w_type = a.w_type,
                     .precision = a.precision});
    r.pool.parallel_for(nt, [&](int t) { r.k.patch_embed_task(a, t, nt); });
}

void run_op(const OpRun& r, const op::Matmul& p) {
    const bool residual = r.n.in[1].valid();
    r.gemm({.m = r.in_desc(0).rows,
            .n = p.w.rows,
            .k = p.w.cols,
            .a = r.in(0),
            .lda = r.in_desc(0).stride,
            .w = p.w.data,
            .ldw = p.w.ld,
            .w_type = p.w.type,
            .bias = p.bias,
            .act = p.act,
            .residual = residual ? r.in(1) : nullptr,
            .ldr = residual ? r.in_desc(1).stride : 0,
            .c = r.out(),
            .ldc = r.out_desc().stride,
            .precision = p.precision});
}

void run_op(const OpRun& r, const op::MatmulGated& p) {
    r.gemm({.m = r.in_desc(0).rows,
            .n = p.gate.rows,
            .k = p.gate.cols,
            .a = r.in(0),
            .lda = r.in_desc(0).stride,
            .w = p.gate.data,
            .w_up = p.up.data,
            .ldw = p.gate.ld,
            .w_type = p.gate.type,
            .c = r.out(),
            .ldc = r.out_desc().stride,
            .precision = p.precision});
}

void run_op(const OpRun& r, const op::LayerNorm& p) {
    const TensorDesc& xd = r.in_desc(0);
    const TensorDesc& od = r.out_desc();
    const float* x = r.in(0);
    float* out = r.out();
    r.parallel_rows(xd.rows, xd.cols, [&](int r0, int r1) {
        r.k.layer_norm_f32({.x = x + r0 * xd.stride,
                            .x_stride = xd.stride,
                            .w = p.w,
                            .b = p.b,
                            .y = out + r0 * od.stride,
                            .y_stride = od.stride,
                            .rows = r1 - r0,
                            .dim = xd.cols,
                            .eps = p.eps});
    });
}

void run_op(const OpRun& r, const op::RmsNorm& p) {
    const TensorDesc& xd = r.in_desc(0);
    const float* x = r.in(0);
    float* out = r.out();
    if (xd.cols == p.group) {
        const TensorDesc& od = r.out_desc();
        r.parallel_rows(xd.rows, xd.cols, [&](int r0, int r1) {
            r.k.rms_norm_f32({.x = x + r0 * xd.stride,
                              .x_stride = xd.stride,
                              .w = p.w,
                              .y = out + r0 * od.stride,
                              .y_stride = od.stride,
                              .rows = r1 - r0,
                              .dim = p.group,
                              .eps = p.eps});
        });
        return;
    }
    const int groups = xd.cols / p.group;
    if (xd.stride != xd.cols) {
        // Rows inside a wider tensor (q or k of a fused qkv product): one row's groups at a time.
        const TensorDesc& od = r.out_desc();
        r.parallel_rows(xd.rows, xd.cols, [&](int r0, int r1) {
            for (int i = r0; i < r1; ++i) {
                r.k.rms_norm_f32({.x = x + std::ptrdiff_t(i) * xd.stride,
                                  .x_stride = p.group,
                                  .w = p.w,
                                  .y = out + std::ptrdiff_t(i) * od.stride,
                                  .y_stride = p.group,
                                  .rows = groups,
                                  .dim = p.group,
                                  .eps = p.eps});
            }
        });
        return;
    }
    // Contiguous rows: each group (head) is one row of `group` values.
    r.parallel_rows(xd.rows * groups, p.group, [&](int r0, int r1) {
        r.k.rms_norm_f32({.x = x + std::ptrdiff_t(r0) * p.group,
                          .x_stride = p.group,
                          .w = p.w,
                          .y = out + std::ptrdiff_t(r0) * p.group,
                          .y_stride = p.group,
                          .rows = r1 - r0,
                          .dim = p.group,
                          .eps = p.eps});
    });
}

void run_op(const OpRun& r, const op::Rope& p) {
    const TensorDesc& od = r.out_desc();
    const TensorDesc& cd = r.in_desc(1);
    float* x = r.out();  // in place on in0
    const float* cos = r.in(1);
    const float* sin = r.in(2);
    r.parallel_rows(od.rows, od.cols, [&](int r0, int r1) {
        r.k.rope_f32({.x = x + r0 * od.stride,
                      .x_stride = od.stride,
                      .rows = r1 - r0,
                      .n_heads = p.n_heads,
                      .head_dim = p.head_dim,
                      .cos = cos + r0 * cd.stride,
                      .sin = sin + r0 * cd.stride,
                      .cs_stride = cd.stride});
    });
}

AttentionArgs attention_args(const OpRun& r, const op::Attention& p) {
    const TensorDesc& qd = r.in_desc(0);
    AttentionArgs a{.n_q = qd.rows,
                    .n_kv = p.n_kv,
                    .n_heads = p.n_heads,
                    .n_kv_heads = p.n_kv_heads,
                    .head_dim = p.head_dim,
                    .q = r.in(0),
                    .q_row_stride = qd.stride,
                    .q_head_stride = p.head_dim,
                    .out = r.out(),
                    .out_row_stride = r.out_desc().stride,
                    .out_head_stride = p.head_dim,
                    .scale = p.scale,
                    .causal = p.causal,
                    .q_pos0 = p.pos0,
                    .round_bf16 = p.precision == GemmPrecision::kBF16,
                    // Attention over a KV cache is the kind decode continues row by row.
                    .incremental = p.use_cache};
    if (p.use_cache) {
        a.k = p.kv.k;
        a.v = p.kv.v;
        a.kv_type = p.kv.type;
        a.k_row_stride = a.v_row_stride = p.head_dim;
        a.k_head_stride = a.v_head_stride = p.kv.head_stride;
    } else {
        a.k = r.in(1);
        a.v = r.in(2);
        a.k_row_stride = r.in_desc(1).stride;
        a.v_row_stride = r.in_desc(2).stride;
        a.k_head_stride = a.v_head_stride = p.head_dim;
    }
    return a;
}

// The decode row of a fused attention node (op::Attention::prep), or one that prepares nothing.
DecodeRow decode_row(const OpRun& r, const op::Attention& p, const AttentionArgs& a, int nt) {
    if (p.prep.q_norm == nullptr) return {};
    // Task t must be kv head t (attention_plan.h), which one query row always gives.
    QVL_CHECK(a.n_q == 1 && p.use_cache && nt == p.n_kv_heads, "decode row: split");
    return {.prep = &p.prep,
            .q = r.in(0),
            .k = r.in(1),
            .v = r.in(2),
            .kv = p.kv,
            .pos = p.pos0,
            .n_heads = p.n_heads,
            .n_kv_heads = p.n_kv_heads,
            .head_dim = p.head_dim};
}

void run_op(const OpRun& r, const op::Attention& p) {
    const AttentionArgs a = attention_args(r, p);
    const int nt = attention_num_tasks(a, r.pool.size());
    const DecodeRow row = decode_row(r, p, a, nt);
    trace_attention(a);
    r.pool.parallel_for(nt, [&](int t) {
        prepare_decode_head(r.k, row, t);
        r.k.attention_task(a, t, nt);
    });
}

// K (after RoPE) and V rows into the arena: copied for f32, rounded to nearest even for bf16.
// Rows go to distinct positions, element by element, so any split stores the same bits; split
// because a prompt's store is serial work that does not shrink with more threads otherwise (the
// scaling simulator put it at 10 % of a 1280x720 prefill at 32 threads).
void run_op(const OpRun& r, const op::StoreKv& p) {
    const TensorDesc& kd = r.in_desc(0);
    const TensorDesc& vd = r.in_desc(1);
    const float* k = r.in(0);
    const float* v = r.in(1);
    r.parallel_rows(kd.rows, 2 * p.n_kv_heads * p.head_dim, [&](int r0, int r1) {
        for (int i = r0; i < r1; ++i) {
            for (int h = 0; h < p.n_kv_heads; ++h) {
                store_kv_head(p.kv, p.pos0 + i, h, p.head_dim, k + i * kd.stride + h * p.head_dim,
                              v + i * vd.stride + h * p.head_dim);
            }
        }
    });
}

void run_op(const OpRun& r, const op::Add&) {
    const TensorDesc& od = r.out_desc();
    const float* a = r.in(0);
    const float* b = r.in(1);
    float* out = r.out();
    const std::ptrdiff_t sa = r.in_desc(0).stride, sb = r.in_desc(1).stride;
    r.parallel_rows(od.rows, od.cols, [&](int r0, int r1) {
        for (int i = r0; i < r1; ++i) {
            r.k.add_f32(a + i * sa, b + i * sb, out + i * od.stride, od.cols);
        }
    });
}

void run_op(const OpRun& r, const op::AddRows& p) {
    const TensorDesc& od = r.out_desc();
    const TensorDesc& sd = r.in_desc(1);
    for (int i = 0; i < sd.rows; ++i) {
        float* y = r.out() + std::ptrdiff_t(p.rows[i]) * od.stride;
        r.k.add_f32(y, r.in(1) + i * sd.stride, y, od.cols);
    }
}

void run_op(const OpRun& r, const op::ScatterRows& p) {
    const TensorDesc& od = r.out_desc();
    const TensorDesc& sd = r.in_desc(1);
    for (int i = 0; i < sd.rows; ++i) {
        std::memcpy(r.out() + std::ptrdiff_t(p.rows[i]) * od.stride, r.in(1) + i * sd.stride,
                    sizeof(float) * od.cols);
    }
}

// The attention nodes of a decode batch (one per sequence, model/text_decoder.cpp) run as one
// job: each keeps its own split, but the job holds all their tasks, so a 4-sequence step gives a
// 32-thread machine 32 tasks instead of 8 at a time (bench/scaling.py). The same tasks run
// either way, so the results are the same bits.
constexpr std::size_t kMaxAttentionGroup = 32;

// The end of the run of consecutive cache attention nodes starting at i that read none of each
// other's outputs (first + 1 when node i starts no such run).
std::size_t attention_group_end(const Graph& g, std::size_t i, std::size_t last) {
    std::size_t end = i + 1;
    const auto cached = [&](std::size_t j) {
        const auto* p = std::get_if<op::Attention>(&g.nodes[j].p);
        return p != nullptr && p->use_cache;
    };
    if (!cached(i)) return end;
    std::ptrdiff_t off = 0;
    while (end < last && end - i < kMaxAttentionGroup && cached(end)) {
        const Node& n = g.nodes[end];
        for (std::size_t j = i; j < end; ++j) {
            const int out = g.root_of(g.nodes[j].out.id, &off);
            for (const Tensor& t : n.in) {
                if (t.valid() && g.root_of(t.id, &off) == out) return end;
            }
        }
        ++end;
    }
    return end;
}

void run_attention_group(const OpRun& r, std::span<const Node> nodes) {
    std::array<AttentionArgs, kMaxAttentionGroup> args;
    std::array<DecodeRow, kMaxAttentionGroup> rows;
    std::array<int, kMaxAttentionGroup + 1> first_task{};
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const OpRun ri{.exec = r.exec,
                       .g = r.g,
                       .n = nodes[i],
                       .arena = r.arena,
                       .k = r.k,
                       .pool = r.pool,
                       .gemm_runner = r.gemm_runner};
        const auto& p = std::get<op::Attention>(nodes[i].p);
        args[i] = attention_args(ri, p);
        const int nt = attention_num_tasks(args[i], r.pool.size());
        rows[i] = decode_row(ri, p, args[i], nt);
        first_task[i + 1] = first_task[i] + nt;
    }
    trace_attention_group({args.data(), nodes.size()});
    r.pool.parallel_for(first_task[nodes.size()], [&](int t) {
        std::size_t i = 0;
        while (t >= first_task[i + 1]) ++i;
        prepare_decode_head(r.k, rows[i], t - first_task[i]);
        r.k.attention_task(args[i], t - first_task[i], first_task[i + 1] - first_task[i]);
    });
}

// For the scaling trace: a graph of the vision tower, a prefill (some attention node has
// several query rows) or a decode step.
const char* run_phase(const Graph& g) {
    bool several_rows = false;
    for (const Node& n : g.nodes) {
        if (std::string_view(n.scope).starts_with("vision")) return "vision";
        if (n.op == OpKind::kAttention && g.tensors[n.in[0].id].rows > 1) several_rows = true;
    }
    return several_rows ? "prefill" : "decode";
}

}  // namespace

std::size_t Executor::run_range(const Graph& g, std::byte* arena, std::size_t first,
                                std::size_t last, double deadline_ms) {
    QVL_CHECK(first <= last && last <= g.nodes.size(), "node range outside the graph");
    std::size_t next = first;
    base::TaskTrace* const trace = base::TaskTrace::active();
    if (trace != nullptr && first == 0) trace->begin_run(run_phase(g));
    while (next < last) {
        const std::size_t end = attention_group_end(g, next, last);
        const Node& n = g.nodes[next];
        if (trace != nullptr) {
            trace->begin_node(full_name(n));
            const double c0 = base::TaskTrace::thread_cpu_ms();
            const double t0 = base::now_ms();
            run_nodes(g, next, end, arena);
            const double t1 = base::now_ms();
            trace->end_node(op_name(n.op), t0, t1, c0, base::TaskTrace::thread_cpu_ms());
        } else if (!profile_on_) {
            run_nodes(g, next, end, arena);
        } else {
            const double t0 = base::now_ms();
            run_nodes(g, next, end, arena);
            const double ms = base::now_ms() - t0;
            profile_.ms_by_op[std::size_t(n.op)] += ms;
            profile_.calls_by_op[std::size_t(n.op)] += long(end - next);
            const std::string layer =
                n.layer >= 0 ? fmt::format("{}.{}", n.scope, n.layer) : std::string(n.scope);
            profile_.ms_by_layer[layer] += ms;
            profile_.ms_by_node[n.layer >= 0 ? fmt::format("{}.*.{}", n.scope, n.name)
                                             : full_name(n)] += ms;
        }
        for (; observer_ && next < end; ++next) {
            const Node& o = g.nodes[next];
            const TensorDesc& d = g.tensors[o.out.id];
            observer_(full_name(o), data(g, o.out, arena), d.rows, d.cols, d.stride);
        }
        next = end;
        if (deadline_ms < kNoDeadline && base::now_ms() >= deadline_ms) break;
    }
    // Tasks go to whichever thread is free, so this run may have grown the kernel scratch on
    // one thread only; level all threads now so that the next run of a shape seen so far does
    // not allocate (a decode step must not), whichever thread draws which task.
    if (kernels::scratch_generation() != scratch_generation_) {
        pool_->run_on_each_thread([](int) { kernels::reserve_thread_scratch(); });
        scratch_generation_ = kernels::scratch_generation();
    }
    return next;
}

void Executor::run_nodes(const Graph& g, std::size_t first, std::size_t end, std::byte* arena) {
    const OpRun r{.exec = *this,
                  .g = g,
                  .n = g.nodes[first],
                  .arena = arena,
                  .k = *table_,
                  .pool = *pool_,
                  .gemm_runner = gemm_runner_};
    if (end - first > 1) {
        return run_attention_group(r, std::span(g.nodes).subspan(first, end - first));
    }
    std::visit([&](const auto& params) { run_op(r, params); }, r.n.p);
}

}  // namespace qvl::graph
