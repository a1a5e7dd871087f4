#include "dry_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "common/exit_codes.h"
#include "json_out.h"
#include "run_support.h"

namespace qvl::app {

int run_dry(const RunOptions& o, const SessionOptions& so, const Model& model,
            const Prompt& prompt) {
    // What the process holds already (tokenizer, libraries) now that the model folder is open,
    // read before the estimate's probe allocates; loading may have peaked higher than the run
    // will (the tokenizer's parse is transient).
    const double process_mb = current_rss_mb();
    const double peak_mb = peak_rss_mb();
    const Result<RunEstimate> estimate = estimate_run(model, prompt, o.n_predict, so);
    if (!estimate.ok()) return fail(kExitOther, estimate.status());
    const RunEstimate& e = estimate.value();
    const int prompt_tokens = int(prompt.token_ids().size());
    const int tokens = prompt_tokens + o.n_predict;
    const double total_mb =
        std::max(peak_mb, process_mb + e.weights_mb + e.kv_mb + e.activations_mb);

    std::string problem;
    if (tokens > o.ctx_size) {
        problem =
            fmt::format("prompt of {} tokens plus -n {} does not fit the context of {} tokens",
                        prompt_tokens, o.n_predict, o.ctx_size);
    } else if (e.available_mb > 0 && e.kv_mb + e.activations_mb > e.available_mb) {
        problem = fmt::format("needs {:.0f} MB of anonymous memory; {:.0f} MB are available",
                              e.kv_mb + e.activations_mb, e.available_mb);
    }

    if (o.json) {
        const std::string images = media_json(prompt.images(), false) +
                                   ", \"videos\": " + media_json(prompt.images(), true);
        fmt::print(
            "{{\"images\": {}, \"prompt_tokens\": {}, \"n_predict\": {}, \"ctx_size\": {}, "
            "\"memory_mb\": {{\"weights\": {:.1f}, \"kv\": {:.1f}, \"activations\": {:.1f}, "
            "\"process\": {:.1f}, \"total\": {:.1f}}}, \"estimate_ms\": {{\"vision\": {:.1f}, "
            "\"prefill\": {:.1f}, \"ttft\": {:.1f}, \"decode_per_token\": {:.2f}}}, "
            "\"gflop\": {{\"vision\": {:.2f}, \"prefill\": {:.2f}}}, \"probe\": "
            "{{\"matmul_gflops\": {:.1f}, \"weights_gbps\": {:.1f}}}, \"fits\": {}{}}}\n",
            images, prompt_tokens, o.n_predict, o.ctx_size, e.weights_mb, e.kv_mb, e.activations_mb,
            process_mb, total_mb, e.vision_ms, e.prefill_ms, e.ttft_ms, e.decode_ms_per_token,
            e.vision_gflop, e.prefill_gflop, e.matmul_gflops, e.weights_gbps,
            problem.empty() ? "true" : "false",
            problem.empty() ? "" : ", \"problem\": " + json_quote(problem));
    } else {
        for (const ImageInfo& im : prompt.images()) {
            if (im.video) {
                fmt::print("video {}: {}x{}, {} frames sampled of {:.1f} s -> {}x{}, {} tokens\n",
                           im.name, im.width, im.height, im.frames, im.duration_s, im.resized_width,
                           im.resized_height, im.tokens);
                continue;
            }
            fmt::print("image {}: {}x{} -> {}x{}, {} tokens\n", im.name, im.width, im.height,
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
            prompt_tokens, o.n_predict, o.ctx_size, total_mb, e.weights_mb, e.kv_mb,
            e.activations_mb, process_mb, e.vision_ms, e.prefill_ms, e.ttft_ms,
            e.decode_ms_per_token, e.vision_gflop, e.prefill_gflop, e.matmul_gflops,
            e.decode_gbytes_per_token, e.weights_gbps);
        if (!problem.empty()) fmt::print("does not fit: {}\n", problem);
    }
    return problem.empty() ? kExitOk : kExitResource;
}

}  // namespace qvl::app
