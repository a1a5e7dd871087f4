#include "dry_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "common/exit_codes.h"
#include "io/json_write.h"
#include "json_out.h"
#include "run_support.h"
#include "runtime/cost_model.h"
#include "runtime/memory_budget.h"

namespace qvl::app {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

int run_dry(const RunOptions& o, const runtime::SessionOptions& so, const model::Model& model,
            const runtime::PreparedPrompt& prompt) {
    const model::ModelConfig& cfg = model.config();
    runtime::RunShape shape{.prompt_tokens = int(prompt.ids.size()),
                            .n_predict = o.n_predict,
                            .kv_type = runtime::session_kv_type(so)};
    for (const image::PreprocessedImage& im : prompt.images) {
        shape.image_patches.push_back(im.grid_t * im.grid_h * im.grid_w);
    }
    // Memory the run touches: every weight page, the KV rows of prompt + answer, the arena of its
    // largest graph, the visual features of its images, and what the process holds already
    // (tokenizer, libraries) now that the model folder is open.
    const int tokens = shape.prompt_tokens + o.n_predict;
    const double weights_mb = double(model.weights().mapped_bytes()) / kMiB;
    const double kv_mb =
        double(tokens) * runtime::kv_bytes_per_token(cfg.text, shape.kv_type) / kMiB;
    int image_tokens = 0;
    for (const runtime::ImageInfo& info : prompt.infos) image_tokens += info.tokens;
    const double visual_mb = double(image_tokens) * cfg.text.hidden_size * sizeof(float) *
                             (1 + cfg.vision.deepstack_visual_indexes.size()) / kMiB;
    const double activations_mb =
        double(runtime::activation_bytes(model, shape)) / kMiB + visual_mb;
    const double process_mb = current_rss_mb();
    // Loading may have peaked higher than the run will (the tokenizer's parse is transient).
    const double total_mb =
        std::max(peak_rss_mb(), process_mb + weights_mb + kv_mb + activations_mb);

    const runtime::MachineRates rates = runtime::probe_rates(so);
    const runtime::CostEstimate est = runtime::estimate_cost(cfg, shape, rates);

    std::string problem;
    const double available_mb = double(runtime::available_memory_bytes()) / kMiB;
    if (tokens > o.ctx_size) {
        problem =
            fmt::format("prompt of {} tokens plus -n {} does not fit the context of {} tokens",
                        shape.prompt_tokens, o.n_predict, o.ctx_size);
    } else if (available_mb > 0 && kv_mb + activations_mb > available_mb) {
        problem = fmt::format("needs {:.0f} MB of anonymous memory; {:.0f} MB are available",
                              kv_mb + activations_mb, available_mb);
    }

    if (o.json) {
        std::string images = "[";
        for (std::size_t i = 0; i < prompt.infos.size(); ++i) {
            const runtime::ImageInfo& im = prompt.infos[i];
            images += fmt::format(
                "{}{{\"path\": {}, \"width\": {}, \"height\": {}, \"resized_width\": {}, "
                "\"resized_height\": {}, \"tokens\": {}}}",
                i ? ", " : "", io::json_quote(im.path), im.width, im.height, im.resized_width,
                im.resized_height, im.tokens);
        }
        fmt::print(
            "{{\"images\": {}], \"prompt_tokens\": {}, \"n_predict\": {}, \"ctx_size\": {}, "
            "\"memory_mb\": {{\"weights\": {:.1f}, \"kv\": {:.1f}, \"activations\": {:.1f}, "
            "\"process\": {:.1f}, \"total\": {:.1f}}}, \"estimate_ms\": {{\"vision\": {:.1f}, "
            "\"prefill\": {:.1f}, \"ttft\": {:.1f}, \"decode_per_token\": {:.2f}}}, "
            "\"gflop\": {{\"vision\": {:.2f}, \"prefill\": {:.2f}}}, \"probe\": "
            "{{\"matmul_gflops\": {:.1f}, \"weights_gbps\": {:.1f}}}, \"fits\": {}{}}}\n",
            images, shape.prompt_tokens, o.n_predict, o.ctx_size, weights_mb, kv_mb, activations_mb,
            process_mb, total_mb, est.vision_ms, est.prefill_ms, est.ttft_ms,
            est.decode_ms_per_token, est.vision_gflop, est.prefill_gflop, rates.matmul_gflops,
            rates.weights_gbps, problem.empty() ? "true" : "false",
            problem.empty() ? "" : ", \"problem\": " + io::json_quote(problem));
    } else {
        for (const runtime::ImageInfo& im : prompt.infos) {
            fmt::print("image {}: {}x{} -> {}x{}, {} tokens\n", im.path, im.width, im.height,
                       im.resized_width, im.resized_height, im.tokens);
        }
        fmt::print(
            "prompt: {} tokens (+ up to {} new, context {})\n"
            "memory: {:.0f} MB total = weights {:.0f} + kv {:.0f} + activations {:.0f} + "
            "process {:.0f}\n"
            "estimate: vision {:.0f} ms, prefill {:.0f} ms, time to first token {:.0f} ms, "
            "decode {:.1f} ms/token\n"
            "  ({:.1f} + {:.1f} GFLOP at {:.0f} GFLOP/s; {:.2f} GB/token at {:.1f} GB/s, measured "
            "now)\n",
            shape.prompt_tokens, o.n_predict, o.ctx_size, total_mb, weights_mb, kv_mb,
            activations_mb, process_mb, est.vision_ms, est.prefill_ms, est.ttft_ms,
            est.decode_ms_per_token, est.vision_gflop, est.prefill_gflop, rates.matmul_gflops,
            est.decode_gbytes_per_token, rates.weights_gbps);
        if (!problem.empty()) fmt::print("does not fit: {}\n", problem);
    }
    return problem.empty() ? kExitOk : kExitResource;
}

}  // namespace qvl::app
