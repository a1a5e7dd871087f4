#include "runtime/cost_model.h"

#include <algorithm>
#include <memory>

#include "base/aligned_buffer.h"
#include "base/bf16.h"
#include "base/cpu_budget.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "graph/builder.h"
#include "graph/executor.h"
#include "graph/planner.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "model/text_decoder.h"
#include "model/vision_encoder.h"

namespace qvl::runtime {
namespace {

// Runs a one-matmul graph x[m, k] . W[n, k]^T repeatedly for at least min_ms; returns ms per run.
double time_matmul(base::ThreadPool* pool, const kernels::KernelTable& kernels,
                   kernels::GemmPrecision precision, int m, int k, int n, const base::bf16* w,
                   double min_ms) {
    graph::Graph g;
    graph::GraphBuilder b(&g, precision);
    std::vector<float> x(std::size_t(m) * k, 0.5f);
    const graph::Tensor in = b.input("probe.x", x.data(), m, k);
    const graph::Tensor out =
        b.matmul("probe.y", in,
                 {.data = w, .type = kernels::WeightType::kBF16, .ld = k, .rows = n, .cols = k});
    b.keep(out);
    graph::Planner planner;
    std::vector<std::byte> arena(planner.plan(g) + 64);
    auto* aligned = reinterpret_cast<std::byte*>(
        (reinterpret_cast<std::uintptr_t>(arena.data()) + 63) & ~std::uintptr_t(63));
    graph::Executor exec(pool, kernels);
    exec.run(g, aligned);  // warm-up: scratch, page faults
    const base::Timer t;
    int runs = 0;
    do {
        exec.run(g, aligned);
        ++runs;
    } while (t.elapsed_ms() < min_ms);
    return t.elapsed_ms() / runs;
}

}  // namespace

double kv_bytes_per_token(const model::TextConfig& text, kernels::KvType type) {
    return 2.0 * text.num_hidden_layers * text.num_key_value_heads * text.head_dim *
           double(kernels::kv_type_bytes(type));
}

MachineRates probe_rates(const SessionOptions& options) {
    const kernels::KernelTable& kernels = session_kernels(options);
    const kernels::GemmPrecision gemm_precision = session_gemm_precision(options);
    base::ThreadPool pool(options.threads > 0 ? options.threads : base::default_threads());
    MachineRates rates;
    // Compute: a text-layer product at prefill size, weights in cache after the first run.
    constexpr int kM = 256, kK = 2048, kN = 2048;
    std::vector<base::bf16> small(std::size_t(kN) * kK, base::f32_to_bf16(0.01f));
    const double gemm_ms =
        time_matmul(&pool, kernels, gemm_precision, kM, kK, kN, small.data(), 150.0);
    rates.matmul_gflops = 2.0 * kM * kK * kN / (gemm_ms * 1e6);
    // Memory: 384 MB of weights, more than any last-level cache seen here (260 MB), as in decode.
    constexpr int kBigK = 2048, kBigN = 96 * 1024;
    std::vector<base::bf16> big(std::size_t(kBigN) * kBigK, base::f32_to_bf16(0.01f));
    const double gemv_ms =
        time_matmul(&pool, kernels, gemm_precision, 1, kBigK, kBigN, big.data(), 100.0);
    rates.weights_gbps = double(big.size()) * sizeof(base::bf16) / (gemv_ms * 1e6);
    return rates;
}

CostEstimate estimate_cost(const model::ModelConfig& config, const RunShape& shape,
                           const MachineRates& rates) {
    const model::VisionConfig& vc = config.vision;
    const model::TextConfig& tc = config.text;
    CostEstimate c;
    // Vision (spec 9.2): patch embedding, per-block linears and attention, the mergers.
    const double d = vc.hidden_size, ff = vc.intermediate_size;
    const double merge2 = double(vc.spatial_merge_size) * vc.spatial_merge_size;
    const double patch_in = 3.0 * vc.temporal_patch_size * vc.patch_size * vc.patch_size;
    const double mergers = 1.0 + double(vc.deepstack_visual_indexes.size());
    for (int n_patches : shape.image_patches) {
        const double n = n_patches;
        const double linear = 2 * n * patch_in * d + vc.depth * 2 * n * (4 * d * d + 2 * d * ff);
        const double attention = vc.depth * 4.0 * n * n * d;
        const double merger =
            mergers * 2 * (n / merge2) * (merge2 * d) * (merge2 * d + vc.out_hidden_size);
        c.vision_gflop += (linear + attention + merger) * 1e-9;
    }
    // Text (spec 9.3): linear parameters per layer, causal attention, one lm_head row.
    const double h = tc.hidden_size, q = double(tc.num_attention_heads) * tc.head_dim;
    const double kv = double(tc.num_key_value_heads) * tc.head_dim;
    const double layer_params = h * q + 2 * h * kv + q * h + 3 * h * tc.intermediate_size;
    const double t = shape.prompt_tokens;
    const double pair = 4.0 * tc.num_hidden_layers * q;  // FLOPs per (query, key) pair
    const double head = 2.0 * h * tc.vocab_size;
    c.prefill_gflop =
        (2 * t * layer_params * tc.num_hidden_layers + pair * t * (t + 1) / 2 + head) * 1e-9;
    // Decode: every text weight (bf16) and the KV cache (f32 or bf16) once per token.
    const double weight_bytes = 2.0 * (layer_params * tc.num_hidden_layers + h * tc.vocab_size);
    const double mean_ctx = t + shape.n_predict / 2.0;
    c.decode_gbytes_per_token =
        (weight_bytes + kv_bytes_per_token(tc, shape.kv_type) * mean_ctx) * 1e-9;

    const double gflops = std::max(rates.matmul_gflops, 1e-3);
    c.vision_ms = c.vision_gflop / gflops * 1e3;
    c.prefill_ms = c.prefill_gflop / gflops * 1e3;
    c.ttft_ms = c.vision_ms + c.prefill_ms;
    c.decode_ms_per_token = c.decode_gbytes_per_token / std::max(rates.weights_gbps, 1e-3) * 1e3;
    return c;
}

std::size_t activation_bytes(const model::Model& model, const RunShape& shape) {
    const model::ModelConfig& cfg = model.config();
    // Planning reads shapes only: every input may point at the same placeholder.
    static float placeholder[64];
    static std::int32_t ids[64];
    graph::Graph g;
    graph::Planner planner;
    std::size_t bytes = 0;
    const int patches = shape.image_patches.empty() ? 0
                                                    : *std::max_element(shape.image_patches.begin(),
                                                                        shape.image_patches.end());
    if (patches > 0) {
        graph::GraphBuilder b(&g, kernels::GemmPrecision::kF32);
        model::build_vision_graph(b, cfg.vision, model.weights().vision(),
                                  {.n_patches = patches,
                                   .pixel_values = placeholder,
                                   .pos_embed = placeholder,
                                   .rope_cos = placeholder,
                                   .rope_sin = placeholder});
        bytes = planner.plan(g);
    }
    const int chunk = std::clamp(shape.prompt_tokens, 1, kMaxPrefillChunk);
    g.clear();
    graph::GraphBuilder b(&g, kernels::GemmPrecision::kF32);
    std::vector<float*> deepstack(cfg.vision.deepstack_visual_indexes.size(), placeholder);
    model::build_text_graph(
        b, cfg.text, model.weights().text(),
        graph::KvCacheView{.base = placeholder, .layer_stride = 2, .head_stride = 1},
        {.n_tokens = chunk,
         .pos0 = 0,
         .ids = ids,
         .rope_cos = placeholder,
         .rope_sin = placeholder,
         .n_visual = patches > 0 ? chunk : 0,
         .visual_rows = ids,
         .image_embeds = placeholder,
         .deepstack = deepstack});
    return std::max(bytes, planner.plan(g));
}

}  // namespace qvl::runtime
