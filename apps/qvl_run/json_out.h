// The --json report and the stderr timing block of qvl-run (cli.md "Output").
#pragma once

#include <qvl/qvl.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::app {

// What the report says of the prompt (the Prompt itself, with its images, moves into the
// request).
struct PromptFacts {
    std::vector<std::int32_t> ids;
    std::vector<ImageInfo> images;
    double image_decode_ms = 0, preprocess_ms = 0;

    static PromptFacts of(const Prompt& p) {
        return {p.token_ids(), p.images(), p.image_decode_ms(), p.preprocess_ms()};
    }
};

struct RunReport {
    const PromptFacts* prompt = nullptr;
    const Generation* result = nullptr;  // finish_reason "cancelled" reads "interrupted"
    int threads = 0;
    std::string threads_reason;           // why that many: "--threads" or the default's CPU budget
    const char* weights = "bf16";         // the text decoder's weight format
    const char* vision_weights = "bf16";  // the vision tower's
    // What ran: the kernel tier ("avx2") and the precision with auto resolved ("f32-kv-bf16").
    const char* isa = "";
    const char* precision = "";
    double load_ms = 0, total_ms = 0, peak_rss_mb = 0;
    std::string boxes_json;  // grounding boxes of the answer as a JSON array; "" = none
    // --logprobs: names the tokens of result->logprobs (null: no "logprobs" key).
    const Model* logprobs_model = nullptr;
};

// [{"id", "token", "bytes", "logprob", "top_logprobs": [{"id", "token", "bytes", "logprob"}]}],
// one entry per generated token: OpenAI's shape, plus the token ids.
std::string logprobs_json(std::span<const TokenLogprob> logprobs, const Model& model);

std::string json_int_array(std::span<const std::int32_t> ids);
// The "images" (videos false) or "videos" array of the report: [{"path", "width", "height",
// "resized_width", "resized_height", "tokens"}], a video with "frames" (sampled), "fps" and
// "duration_s" (the stream's), "sample_fps" and "max_frames" (the sampling used) too.
std::string media_json(const std::vector<ImageInfo>& infos, bool videos);
// Only the images of a prompt's visual inputs (grounding boxes and --draw-boxes refer to them).
std::vector<ImageInfo> images_only(const std::vector<ImageInfo>& infos);
std::string format_json_report(const RunReport& r);
std::string format_timing_block(const RunReport& r);

}  // namespace qvl::app
