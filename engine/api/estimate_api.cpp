// qvl::estimate_run: the memory a run touches and the times the FLOP/byte model predicts
// (runtime/cost_model.h), for qvl-run --dry-run.

#include "api/convert.h"
#include "api/internals.h"
#include "runtime/cost_model.h"
#include "runtime/memory_budget.h"

namespace qvl {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

Result<RunEstimate> estimate_run(const Model& model, const Prompt& prompt, int n_predict,
                                 const SessionOptions& options) {
    return api::guarded<RunEstimate>("estimating", [&]() -> Result<RunEstimate> {
        base::Result<runtime::SessionOptions> so = api::to_engine(options);
        if (!so.ok()) return api::from_engine(so.status());
        const model::Model& m = *model.impl()->model;
        const model::ModelConfig& cfg = m.config();
        const runtime::PreparedPrompt& p = prompt.impl().prepared;
        runtime::RunShape shape{.prompt_tokens = int(p.ids.size()),
                                .n_predict = n_predict,
                                .kv_type = runtime::session_kv_type(so.value())};
        for (const image::PreprocessedImage& im : p.images) {
            shape.image_patches.push_back(im.grid_t * im.grid_h * im.grid_w);
        }
        // Memory the run touches: every weight page, the KV rows of prompt + answer, the arena of
        // its largest graph and the visual features of its images.
        const int tokens = shape.prompt_tokens + n_predict;
        RunEstimate e;
        e.weights_mb = double(m.weights().mapped_bytes()) / kMiB;
        e.kv_mb = double(tokens) * runtime::kv_bytes_per_token(cfg.text, shape.kv_type) / kMiB;
        int image_tokens = 0;
        for (const runtime::ImageInfo& info : p.infos) image_tokens += info.tokens;
        const double visual_mb = double(image_tokens) * cfg.text.hidden_size * sizeof(float) *
                                 double(1 + cfg.vision.deepstack_visual_indexes.size()) / kMiB;
        e.activations_mb = double(runtime::activation_bytes(m, shape)) / kMiB + visual_mb;
        e.available_mb = double(runtime::available_memory_bytes()) / kMiB;
        const runtime::MachineRates rates = runtime::probe_rates(so.value());
        const runtime::CostEstimate est = runtime::estimate_cost(cfg, shape, rates);
        e.vision_ms = est.vision_ms;
        e.prefill_ms = est.prefill_ms;
        e.ttft_ms = est.ttft_ms;
        e.decode_ms_per_token = est.decode_ms_per_token;
        e.vision_gflop = est.vision_gflop;
        e.prefill_gflop = est.prefill_gflop;
        e.decode_gbytes_per_token = est.decode_gbytes_per_token;
        e.matmul_gflops = rates.matmul_gflops;
        e.weights_gbps = rates.weights_gbps;
        return e;
    });
}

}  // namespace qvl
