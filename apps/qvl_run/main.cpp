// qvl-run: answers a prompt about images with a Qwen3-VL model folder. The command-line
// contract (flags, output, exit codes) is stable: scripts depend on it (README, cli.md).
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "args.h"
#include "base/log.h"
#include "base/npy.h"
#include "base/status.h"
#include "base/timer.h"
#include "base/version.h"
#include "batch.h"
#include "env.h"
#include "exit_codes.h"
#include "io/json.h"
#include "json_out.h"
#include "model/model.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "text/tokenizer.h"

namespace qvl::app {
namespace {

using base::ErrorCode;

// Set by SIGINT: generation stops after the current token, the text so far is flushed and
// qvl-run exits 130 (the shell's code for an interrupted program).
std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted.store(true); }
constexpr int kExitInterrupted = 130;

int fail(int code, const std::string& message, const char* hint = nullptr) {
    std::fprintf(stderr, "qvl-run: error: %s\n", message.c_str());
    if (hint != nullptr) std::fprintf(stderr, "hint: %s\n", hint);
    return code;
}

int fail(int code, const base::Status& st, const char* hint = nullptr) {
    return fail(code, st.message(), hint);
}

// Preparing the prompt fails on its input (exit 4), an image over the decoder's pixel or file
// size limit included, whatever its format; only running out of memory is a resource failure
// (exit 5).
int input_exit(const base::Status& st) {
    return st.code() == ErrorCode::kResourceExhausted ? kExitResource : kExitInput;
}

double peak_rss_mb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_maxrss) / 1024.0;
}

// The conversation the flags describe: --messages, or a system turn plus one user turn with
// the images first and then the text.
base::Result<std::vector<text::ChatMessage>> build_messages(const RunOptions& o,
                                                            const std::string& text) {
    if (!o.messages_file.empty()) return text::load_messages_file(o.messages_file);
    std::vector<text::ChatMessage> messages;
    if (!o.system.empty()) {
        messages.push_back(
            {.role = "system", .parts = {{.kind = text::ChatPart::Kind::kText, .text = o.system}}});
    }
    text::ChatMessage user{.role = "user"};
    for (const std::string& path : o.images) {
        user.parts.push_back({.kind = text::ChatPart::Kind::kImage, .image_path = path});
    }
    user.parts.push_back({.kind = text::ChatPart::Kind::kText, .text = text});
    messages.push_back(std::move(user));
    return messages;
}

runtime::SamplingParams sampling_from(const RunOptions& o, const model::GenerationConfig& gen) {
    runtime::SamplingParams s;
    if (gen.do_sample) {
        s.temperature = gen.temperature;
        s.top_k = gen.top_k;
        s.top_p = gen.top_p;
    }
    // A logits processor, not a sampling warper: Hugging Face applies it to greedy runs too.
    s.repetition_penalty = gen.repetition_penalty;
    if (o.temperature) s.temperature = *o.temperature;
    if (o.top_k) s.top_k = *o.top_k;
    if (o.top_p) s.top_p = *o.top_p;
    if (o.repeat_penalty) s.repetition_penalty = *o.repeat_penalty;
    if (o.presence_penalty) s.presence_penalty = *o.presence_penalty;
    s.seed = o.seed ? *o.seed : std::random_device{}();
    return s;
}

int run(const RunOptions& o, const EnvOptions& env) {
    if (o.verbosity < 0) base::set_log_level(base::LogLevel::kError);
    if (o.verbosity > 0) base::set_log_level(base::LogLevel::kInfo);
    if (!o.batch_file.empty()) return run_batch(o, env, sampling_from);
    const base::Timer total;

    // The user's text first: a missing prompt file is an input error before any loading.
    std::string text = o.prompt;
    if (!o.prompt_file.empty()) {
        base::Result<std::string> file = io::read_text_file(o.prompt_file, 64u << 20);
        if (!file.ok()) return fail(kExitInput, file.status());
        text = std::move(file).value();
    }
    // Offsets must point into what the user wrote, not into the rendered chat prompt.
    if (base::Status utf8 = text::Tokenizer::check_utf8(text); !utf8.ok()) {
        return fail(kExitInput, fmt::format("{}: {}", o.prompt_file.empty() ? "-p" : o.prompt_file,
                                            utf8.message()));
    }

    base::Timer t;
    base::Result<std::unique_ptr<model::Model>> loaded = model::Model::load(
        o.model_dir,
        {.weights = o.weights_q8 ? model::WeightFormat::kQ8 : model::WeightFormat::kBF16});
    if (!loaded.ok()) {
        return fail(kExitModel, loaded.status(),
                    "-m takes a Hugging Face Qwen3-VL folder (config.json, model.safetensors, "
                    "tokenizer.json)");
    }
    const model::Model& m = *loaded.value();
    const double load_ms = t.elapsed_ms();

    // One SessionOptions for both the images' preprocessing and the session: they agree.
    runtime::SessionOptions so;
    so.threads = o.threads;
    so.ctx_size = o.ctx_size;
    so.min_image_tokens = o.image_min_tokens.value_or(0);
    so.max_image_tokens = o.image_max_tokens.value_or(0);
    apply_env_options(env, &so);
    image::PreprocessConfig pp = runtime::effective_preprocess(m, so);
    // Without --dump-pixels only a model whose channels need the unfused patch embedding gets
    // pixel_values (image::fused_patch_embed_possible decides); the fused one reads the pixels.
    pp.pixel_values = !o.dump_pixels.empty();
    base::Result<runtime::PreparedPrompt> prepared = base::Status();
    if (o.raw) {
        prepared = runtime::prepare_raw_prompt(m, text);
    } else {
        base::Result<std::vector<text::ChatMessage>> messages = build_messages(o, text);
        if (!messages.ok()) return fail(kExitInput, messages.status());
        prepared = runtime::prepare_chat_prompt(m, messages.value(), pp, io::ImageLimits{});
    }
    if (!prepared.ok()) return fail(input_exit(prepared.status()), prepared.status());
    const runtime::PreparedPrompt& prompt = prepared.value();

    if (o.tokenize) {
        if (o.json) {
            std::printf("{\"prompt_tokens\": %s}\n", json_int_array(prompt.ids).c_str());
        } else {
            for (std::size_t i = 0; i < prompt.ids.size(); ++i) {
                std::printf(i ? " %d" : "%d", prompt.ids[i]);
            }
            std::printf("\n");
        }
        return kExitOk;
    }
    if (!o.dump_pixels.empty()) {
        if (prompt.images.empty()) return fail(kExitUsage, "--dump-pixels needs an image");
        const image::PreprocessedImage& im = prompt.images[0];
        const std::int64_t rows = std::int64_t(im.grid_t) * im.grid_h * im.grid_w;
        const std::string err = base::write_npy_f32(
            o.dump_pixels, im.pixel_values,
            {rows, std::int64_t(im.pixel_values.size()) / std::max<std::int64_t>(rows, 1)});
        if (!err.empty()) return fail(kExitOther, err);
    }
    if (base::Status fits = runtime::check_context_fits(
            0, std::int64_t(prompt.ids.size()) + o.n_predict, o.ctx_size,
            fmt::format("the prompt of {} tokens plus -n {}", prompt.ids.size(), o.n_predict));
        !fits.ok()) {
        return fail(kExitResource, fits,
                    "raise -c/--ctx-size, lower -n, or lower --image-max-tokens");
    }

    base::Result<std::unique_ptr<runtime::Session>> session = runtime::Session::create(m, so);
    if (!session.ok()) {
        return fail(
            session.status().code() == ErrorCode::kResourceExhausted ? kExitResource : kExitOther,
            session.status(), "lower -c/--ctx-size or --image-max-tokens");
    }
    runtime::Session& s = *session.value();

    runtime::GenerateParams gp;
    gp.n_predict = o.n_predict;
    gp.ignore_eos = o.ignore_eos;
    gp.sampling = sampling_from(o, m.generation());
    gp.stop_ids = runtime::default_stop_ids(m);
    gp.cancel = &g_interrupted;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    runtime::GenerateHooks hooks;
    std::string dump_error;
    if (!o.json) {
        hooks.on_text = [](std::string_view piece) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
        };
    }
    if (!o.dump_vision.empty()) {
        hooks.after_vision = [&](const runtime::Session& sess) {
            const std::span<const float> f = sess.image_features(0);
            const std::int64_t hidden = m.config().text.hidden_size;
            dump_error = f.empty() ? "--dump-vision needs an image"
                                   : base::write_npy_f32(o.dump_vision, f,
                                                         {std::int64_t(f.size()) / hidden, hidden});
        };
    }
    if (!o.dump_logits.empty()) {
        hooks.after_prefill = [&](std::span<const float> logits) {
            const std::string err =
                base::write_npy_f32(o.dump_logits, logits, {std::int64_t(logits.size())});
            if (dump_error.empty()) dump_error = err;
        };
    }
    base::Result<runtime::GenerateResult> result = runtime::generate(s, prompt, gp, hooks);
    if (!result.ok()) {
        return fail(result.status().code() == ErrorCode::kOutOfRange ? kExitResource : kExitOther,
                    result.status());
    }
    if (!dump_error.empty()) return fail(kExitOther, dump_error);
    const runtime::GenerateResult& r = result.value();
    if (r.finish_reason == "interrupted") {
        std::fflush(stdout);
        std::fprintf(stderr, "\nqvl-run: interrupted after %zu tokens\n", r.tokens.size());
        return kExitInterrupted;
    }

    RunReport report{.prompt = &prompt,
                     .result = &r,
                     .sampling = gp.sampling,
                     .threads = s.threads(),
                     .weights = m.weight_format() == model::WeightFormat::kQ8 ? "q8" : "bf16",
                     .load_ms = load_ms,
                     .total_ms = total.elapsed_ms(),
                     .peak_rss_mb = peak_rss_mb()};
    if (o.json) {
        std::printf("%s\n", format_json_report(report).c_str());
    } else {
        std::printf("\n");
    }
    if (o.verbosity >= 0) std::fprintf(stderr, "%s", format_timing_block(report).c_str());
    if (so.profile) std::fprintf(stderr, "%s", s.profile().format().c_str());
    return kExitOk;
}

}  // namespace
}  // namespace qvl::app

// The engine reports errors as Status; only the standard library can throw here (bad_alloc
// outside the budgeted arenas), and even then the contract holds: one error line, exit 1.
int main(int argc, char** argv) try {
    qvl::app::RunOptions options;
    const qvl::app::ParseOutcome outcome =
        qvl::app::parse_args(argc, argv, &options, stdout, stderr);
    if (outcome.exit_code >= 0) return outcome.exit_code;
    qvl::app::EnvOptions env;
    if (const int code = qvl::app::read_env_options(&env, stderr); code >= 0) return code;
    if (options.version) {
        std::printf("qvl-run %s (isa %s)\n", qvl::base::version(),
                    qvl::runtime::kernel_isa_name(env.isa));
        return 0;
    }
    return qvl::app::run(options, env);
} catch (const std::exception& e) {
    std::fprintf(stderr, "qvl-run: error: %s\n", e.what());
    return 1;
}
