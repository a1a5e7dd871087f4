#include "json_out.h"

#include <fmt/format.h>

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

// The Engine's "cancelled" is the contract's "interrupted" (cli.md).
const std::string& finish_reason(const Generation& g) {
    static const std::string kInterrupted = "interrupted";
    return g.finish_reason == "cancelled" ? kInterrupted : g.finish_reason;
}

std::string token_entry(std::int32_t id, double logprob, const Model& model) {
    const std::string_view bytes = model.token_bytes(id);
    std::string list = "[";
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        list += fmt::format("{}{}", i ? ", " : "", int(static_cast<unsigned char>(bytes[i])));
    }
    return fmt::format("\"id\": {}, \"token\": {}, \"bytes\": {}], \"logprob\": {}", id,
                       json_quote(bytes), list, json_number(logprob));
}

}  // namespace

std::string logprobs_json(std::span<const TokenLogprob> logprobs, const Model& model) {
    std::string out = "[";
    for (std::size_t i = 0; i < logprobs.size(); ++i) {
        const TokenLogprob& t = logprobs[i];
        out += fmt::format("{}{{{}, \"top_logprobs\": [", i ? ", " : "",
                           token_entry(t.token, t.logprob, model));
        for (std::size_t k = 0; k < t.top.size(); ++k) {
            out += fmt::format("{}{{{}}}", k ? ", " : "",
                               token_entry(t.top[k].first, t.top[k].second, model));
        }
        out += "]}";
    }
    return out + "]";
}

std::string media_json(const std::vector<ImageInfo>& infos, bool videos) {
    std::string out = "[";
    for (const ImageInfo& im : infos) {
        if (im.video != videos) continue;
        out += fmt::format(
            "{}{{\"path\": {}, \"width\": {}, \"height\": {}, \"resized_width\": {}, "
            "\"resized_height\": {}, \"tokens\": {}",
            out.size() > 1 ? ", " : "", json_quote(im.name), im.width, im.height, im.resized_width,
            im.resized_height, im.tokens);
        if (videos) {
            out += fmt::format(
                ", \"frames\": {}, \"fps\": {}, \"duration_s\": {}, \"sample_fps\": {}, "
                "\"max_frames\": {}",
                im.frames, json_number(im.fps), json_number(im.duration_s),
                json_number(im.sample_fps), im.max_frames);
        }
        out += "}";
    }
    return out + "]";
}

std::vector<ImageInfo> images_only(const std::vector<ImageInfo>& infos) {
    std::vector<ImageInfo> out;
    for (const ImageInfo& im : infos)
        if (!im.video) out.push_back(im);
    return out;
}

std::string format_json_report(const RunReport& r) {
    const Generation& g = *r.result;
    const PromptFacts& p = *r.prompt;
    const Timings& t = g.timings;
    const std::string images =
        media_json(p.images, false) + ", \"videos\": " + media_json(p.images, true);
    std::string boxes;
    if (!r.boxes_json.empty()) boxes = ", \"boxes\": " + r.boxes_json;
    if (r.logprobs_model != nullptr) {
        boxes += ", \"logprobs\": " + logprobs_json(g.logprobs, *r.logprobs_model);
    }
    return fmt::format(
        "{{\"prompt_tokens\": {}, \"tokens\": {}, \"text\": {}, \"finish_reason\": \"{}\", "
        "\"images\": {}, \"timings_ms\": {{\"load\": {:.3f}, \"image_decode\": {:.3f}, "
        "\"preprocess\": {:.3f}, \"vision\": {:.3f}, \"prefill\": {:.3f}, \"decode\": {:.3f}, "
        "\"ttft\": {:.3f}, \"total\": {:.3f}}}, \"prefill_tokens_per_s\": {:.3f}, "
        "\"decode_tokens_per_s\": {:.3f}, \"peak_rss_mb\": {:.1f}, \"threads\": {}, "
        "\"threads_reason\": {}, "
        "\"weights\": \"{}\", \"vision_weights\": \"{}\", \"isa\": \"{}\", \"precision\": \"{}\", "
        "\"sampling\": "
        "{{\"temperature\": {}, \"top_k\": {}, \"top_p\": {}, "
        "\"seed\": {}, \"repetition_penalty\": {}, \"presence_penalty\": {}, "
        "\"frequency_penalty\": {}}}{}}}",
        json_int_array(p.ids), json_int_array(g.tokens), json_quote(g.text), finish_reason(g),
        images, r.load_ms, p.image_decode_ms, p.preprocess_ms, t.vision_ms, t.prefill_ms,
        t.decode_ms, p.image_decode_ms + p.preprocess_ms + t.ttft_ms, r.total_ms,
        per_s(double(p.ids.size()), t.prefill_ms), per_s(t.decoded_steps, t.decode_ms),
        r.peak_rss_mb, r.threads, json_quote(r.threads_reason), r.weights, r.vision_weights, r.isa,
        r.precision, g.sampling.temperature, g.sampling.top_k, g.sampling.top_p, g.sampling.seed,
        g.sampling.repetition_penalty, g.sampling.presence_penalty, g.sampling.frequency_penalty,
        boxes);
}

std::string format_timing_block(const RunReport& r) {
    const Timings& t = r.result->timings;
    const PromptFacts& p = *r.prompt;
    const std::size_t n = p.ids.size();
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
        "kernels         {} ({} precision, {} weights, {} vision weights)\n",
        r.threads, r.load_ms, p.image_decode_ms, p.preprocess_ms, t.vision_ms, t.prefill_ms, n,
        per_s(double(n), t.prefill_ms), t.decode_ms, t.decoded_steps,
        per_s(t.decoded_steps, t.decode_ms), p.image_decode_ms + p.preprocess_ms + t.ttft_ms,
        r.total_ms, r.peak_rss_mb, r.isa, r.precision, r.weights, r.vision_weights);
}

}  // namespace qvl::app
