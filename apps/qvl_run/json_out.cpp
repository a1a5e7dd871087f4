#include "json_out.h"

#include <fmt/format.h>

#include "io/json_write.h"

namespace qvl::app {

std::string json_int_array(std::span<const std::int32_t> ids) {
    std::string out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(ids[i]);
    }
    return out + "]";
}

namespace {
double per_s(double count, double ms) { return ms > 0 ? 1000.0 * count / ms : 0.0; }
}  // namespace

std::string format_json_report(const RunReport& r) {
    const runtime::GenerateResult& g = *r.result;
    const runtime::PreparedPrompt& p = *r.prompt;
    std::string images = "[";
    for (std::size_t i = 0; i < p.infos.size(); ++i) {
        const runtime::ImageInfo& im = p.infos[i];
        images += fmt::format(
            "{}{{\"path\": {}, \"width\": {}, \"height\": {}, \"resized_width\": {}, "
            "\"resized_height\": {}, \"tokens\": {}}}",
            i ? ", " : "", io::json_quote(im.path), im.width, im.height, im.resized_width,
            im.resized_height, im.tokens);
    }
    images += "]";
    std::string boxes;
    if (!r.boxes_json.empty()) boxes = ", \"boxes\": " + r.boxes_json;
    return fmt::format(
        "{{\"prompt_tokens\": {}, \"tokens\": {}, \"text\": {}, \"finish_reason\": \"{}\", "
        "\"images\": {}, \"timings_ms\": {{\"load\": {:.3f}, \"image_decode\": {:.3f}, "
        "\"preprocess\": {:.3f}, \"vision\": {:.3f}, \"prefill\": {:.3f}, \"decode\": {:.3f}, "
        "\"ttft\": {:.3f}, \"total\": {:.3f}}}, \"prefill_tokens_per_s\": {:.3f}, "
        "\"decode_tokens_per_s\": {:.3f}, \"peak_rss_mb\": {:.1f}, \"threads\": {}, "
        "\"threads_reason\": {}, "
        "\"weights\": \"{}\", \"isa\": \"{}\", \"precision\": \"{}\", \"sampling\": "
        "{{\"temperature\": {}, \"top_k\": {}, \"top_p\": {}, "
        "\"seed\": {}, \"repetition_penalty\": {}, \"presence_penalty\": {}, "
        "\"frequency_penalty\": {}}}{}}}",
        json_int_array(p.ids), json_int_array(g.tokens), io::json_quote(g.text), g.finish_reason,
        images, r.load_ms, p.image_decode_ms, p.preprocess_ms, g.vision_ms, g.prefill_ms,
        g.decode_ms, p.image_decode_ms + p.preprocess_ms + g.ttft_ms, r.total_ms,
        per_s(double(p.ids.size()), g.prefill_ms), per_s(g.decoded_steps, g.decode_ms),
        r.peak_rss_mb, r.threads, io::json_quote(r.threads_reason), r.weights, r.isa, r.precision,
        r.sampling.temperature, r.sampling.top_k, r.sampling.top_p, r.sampling.seed,
        r.sampling.repetition_penalty, r.sampling.presence_penalty, r.sampling.frequency_penalty,
        boxes);
}

std::string format_timing_block(const RunReport& r) {
    const runtime::GenerateResult& g = *r.result;
    const runtime::PreparedPrompt& p = *r.prompt;
    return fmt::format(
        "\n--- qvl-run timings ({} threads) ---\n"
        "load            {:10.1f} ms\n"
        "image decode    {:10.1f} ms\n"
        "preprocess      {:10.1f} ms\n"
        "vision          {:10.1f} ms\n"
        "prefill         {:10.1f} ms  ({} tokens, {:.1f} tokens/s)\n"
        "decode          {:10.1f} ms  ({} steps, {:.2f} tokens/s)\n"
        "time to first   {:10.1f} ms\n"
        "total           {:10.1f} ms\n"
        "peak RSS        {:10.1f} MB\n"
        "kernels         {} ({} precision, {} weights)\n",
        r.threads, r.load_ms, p.image_decode_ms, p.preprocess_ms, g.vision_ms, g.prefill_ms,
        p.ids.size(), per_s(double(p.ids.size()), g.prefill_ms), g.decode_ms, g.decoded_steps,
        per_s(g.decoded_steps, g.decode_ms), p.image_decode_ms + p.preprocess_ms + g.ttft_ms,
        r.total_ms, r.peak_rss_mb, r.isa, r.precision, r.weights);
}

}  // namespace qvl::app
