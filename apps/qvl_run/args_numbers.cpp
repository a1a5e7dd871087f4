// qvl-run's numeric flags: CLI11 hands them over as text; each is converted here, so every
// message has one shape and names the flag and the value.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <system_error>

#include "args_parse.h"

namespace qvl::app {
namespace {

bool given(const CLI::App& app, const char* name) { return app.get_option(name)->count() > 0; }

std::optional<UsageError> to_int(std::string_view flag, const std::string& text, long long lo,
                                 long long hi, long long* value) {
    long long v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec == std::errc::invalid_argument || ptr != end) {
        return UsageError{fmt::format("{}: '{}' is not an integer", flag, text), {}};
    }
    if (ec == std::errc::result_out_of_range || v < lo || v > hi) {
        return UsageError{fmt::format("{}: {} is out of range [{}, {}]", flag, text, lo, hi), {}};
    }
    *value = v;
    return std::nullopt;
}

std::optional<UsageError> to_float(std::string_view flag, const std::string& text, float* value) {
    float v = 0.0f;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) {
        return UsageError{fmt::format("{}: '{}' is not a finite number", flag, text), {}};
    }
    *value = v;
    return std::nullopt;
}

// The whole-number flags and their ranges.
std::optional<UsageError> convert_integers(const CLI::App& app, const NumberTexts& t,
                                           RunOptions* o) {
    long long v = 0;
    if (given(app, "--n-predict")) {
        if (auto e = to_int("--n-predict", t.n_predict, 0, kMaxTokens, &v)) return e;
        o->n_predict = int(v);
    }
    if (given(app, "--ctx-size")) {
        if (auto e = to_int("--ctx-size", t.ctx_size, 16, kMaxTokens, &v)) return e;
        o->ctx_size = int(v);
    }
    if (given(app, "--threads")) {
        if (auto e = to_int("--threads", t.threads, 0, 1024, &v)) {
            e->hint = "0 means one thread per physical core";
            return e;
        }
        o->threads = int(v);
    }
    if (given(app, "--top-k")) {
        if (auto e = to_int("--top-k", t.top_k, 0, 1LL << 30, &v)) return e;
        o->top_k = int(v);
    }
    if (given(app, "--image-min-tokens")) {
        if (auto e = to_int("--image-min-tokens", t.image_min_tokens, 1, kMaxTokens, &v)) return e;
        o->image_min_tokens = int(v);
    }
    if (given(app, "--image-max-tokens")) {
        if (auto e = to_int("--image-max-tokens", t.image_max_tokens, 1, kMaxTokens, &v)) return e;
        o->image_max_tokens = int(v);
    }
    if (given(app, "--parallel")) {
        if (auto e = to_int("--parallel", t.parallel, 1, 32, &v)) return e;
        o->parallel = int(v);
    }
    return std::nullopt;
}

// --weights and --vision-weights: one of the formats the loader quantizes to.
std::optional<UsageError> convert_weight_formats(const CLI::App& app, const NumberTexts& t,
                                                 RunOptions* o) {
    if (given(app, "--weights")) {
        if (t.weights != "bf16" && t.weights != "q8" && t.weights != "q4") {
            return UsageError{fmt::format("--weights: '{}' is not bf16, q8 or q4", t.weights), {}};
        }
        o->weights_q8 = t.weights == "q8";
        o->weights_q4 = t.weights == "q4";
    }
    if (given(app, "--vision-weights")) {
        if (t.vision_weights != "bf16" && t.vision_weights != "q8") {
            return UsageError{
                fmt::format("--vision-weights: '{}' is not bf16 or q8", t.vision_weights), {}};
        }
        o->vision_q8 = t.vision_weights == "q8";
    }
    return std::nullopt;
}

// --seed (the full 64-bit range) and --admission-budget-ms (a double).
std::optional<UsageError> convert_wide_numbers(const CLI::App& app, const NumberTexts& t,
                                               RunOptions* o) {
    if (given(app, "--seed")) {
        std::uint64_t seed = 0;
        const char* end = t.seed.data() + t.seed.size();
        const auto [ptr, ec] = std::from_chars(t.seed.data(), end, seed);
        if (t.seed.empty() || ec != std::errc() || ptr != end) {
            return UsageError{
                fmt::format("--seed: '{}' is not an integer in [0, 18446744073709551615]", t.seed),
                "leave --seed out for a random seed (the one used is reported)"};
        }
        o->seed = seed;
    }
    if (given(app, "--admission-budget-ms")) {
        double ms = 0.0;
        const std::string& text = t.admission_budget;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
        if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
            !std::isfinite(ms)) {
            return UsageError{
                fmt::format("--admission-budget-ms: '{}' is not a finite number", text), {}};
        }
        if (ms < 0.0 || ms > 1e6) {
            return UsageError{
                fmt::format("--admission-budget-ms: {} is outside [0, 1000000]", text), {}};
        }
        o->admission_budget_ms = ms;
    }
    return std::nullopt;
}

// The real-valued sampling flags and their ranges.
std::optional<UsageError> convert_reals(const CLI::App& app, const NumberTexts& t, RunOptions* o) {
    float f = 0.0f;
    if (given(app, "--temp")) {
        if (auto e = to_float("--temp", t.temperature, &f)) return e;
        if (f < 0.0f) return UsageError{fmt::format("--temp: {} is negative", t.temperature), {}};
        o->temperature = f;
    }
    if (given(app, "--top-p")) {
        if (auto e = to_float("--top-p", t.top_p, &f)) return e;
        if (!(f > 0.0f && f <= 1.0f)) {
            return UsageError{fmt::format("--top-p: {} is out of range (0, 1]", t.top_p), {}};
        }
        o->top_p = f;
    }
    if (given(app, "--repeat-penalty")) {
        if (auto e = to_float("--repeat-penalty", t.repeat_penalty, &f)) return e;
        if (!(f > 0.0f)) {
            return UsageError{fmt::format("--repeat-penalty: {} is not above 0", t.repeat_penalty),
                              "1 means no penalty; values above 1 discourage repetition"};
        }
        o->repeat_penalty = f;
    }
    if (given(app, "--presence-penalty")) {
        if (auto e = to_float("--presence-penalty", t.presence_penalty, &f)) return e;
        if (!(f >= -2.0f && f <= 2.0f)) {
            return UsageError{
                fmt::format("--presence-penalty: {} is out of range [-2, 2]", t.presence_penalty),
                {}};
        }
        o->presence_penalty = f;
    }
    return std::nullopt;
}

// --video-fps and --video-max-frames: the sampling every video of the run gets.
std::optional<UsageError> convert_video_numbers(const CLI::App& app, const NumberTexts& t,
                                                RunOptions* o) {
    if (given(app, "--video-fps")) {
        float f = 0.0f;
        if (auto e = to_float("--video-fps", t.video_fps, &f)) return e;
        if (!(f > 0.0f && f <= 1000.0f)) {
            return UsageError{fmt::format("--video-fps: {} is out of range (0, 1000]", t.video_fps),
                              {}};
        }
        o->video_fps = f;
    }
    if (given(app, "--video-max-frames")) {
        long long v = 0;
        if (auto e = to_int("--video-max-frames", t.video_max_frames, 1, 100000, &v)) return e;
        o->video_max_frames = int(v);
    }
    return std::nullopt;
}

}  // namespace

std::optional<UsageError> convert_numbers(const CLI::App& app, const NumberTexts& t,
                                          RunOptions* o) {
    if (auto e = convert_integers(app, t, o)) return e;
    if (auto e = convert_weight_formats(app, t, o)) return e;
    if (auto e = convert_wide_numbers(app, t, o)) return e;
    if (auto e = convert_video_numbers(app, t, o)) return e;
    return convert_reals(app, t, o);
}

}  // namespace qvl::app
