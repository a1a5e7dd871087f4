// qvl-run: answers a prompt about images with a Qwen3-VL model folder. The command-line
// contract (flags, output, exit codes) is stable: scripts depend on it (README, cli.md).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "args.h"
#include "base/cpu_budget.h"
#include "base/log.h"
#include "base/npy.h"
#include "base/status.h"
#include "base/timer.h"
#include "base/version.h"
#include "batch.h"
#include "chat_mode.h"
#include "common/exit_codes.h"
#include "draw_boxes.h"
#include "dry_run.h"
#include "engine_turn.h"
#include "env.h"
#include "grounding.h"
#include "io/json.h"
#include "io/png_encode.h"
#include "json_out.h"
#include "model/model.h"
#include "progress.h"
#include "run_support.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "text/tokenizer.h"

namespace qvl::app {
namespace {

using base::ErrorCode;

// Set by SIGINT: the request is cancelled (it stops within one token), the text so far is
// flushed and qvl-run exits 130 (the shell's code for an interrupted program); in chat mode only
// the current answer stops.
std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted.store(true); }
constexpr int kExitInterrupted = 130;

// The session's settings: the flags, then the QVL_* environment. One SessionOptions serves both
// the images' preprocessing and the session, so the two agree.
runtime::SessionOptions session_options(const RunOptions& o, const EnvOptions& env) {
    runtime::SessionOptions so;
    so.threads = o.threads;
    so.ctx_size = o.ctx_size;
    so.min_image_tokens = o.image_min_tokens.value_or(0);
    so.max_image_tokens = o.image_max_tokens.value_or(0);
    apply_env_options(env, &so);
    return so;
}

runtime::GenerateParams generate_params(const RunOptions& o, const model::Model& m) {
    runtime::GenerateParams gp;
    gp.n_predict = o.n_predict;
    gp.ignore_eos = o.ignore_eos;
    gp.sampling = sampling_from(o, m.generation());
    gp.stop_ids = runtime::default_stop_ids(m);
    return gp;
}

// One slot: qvl-run serves one conversation. The one-shot run needs no image-feature cache (its
// image is seen once); chat mode keeps the default so a picture asked about again after /clear
// skips the vision tower.
base::Result<std::unique_ptr<runtime::Engine>> create_engine(const model::Model& m,
                                                             const runtime::SessionOptions& so,
                                                             bool image_cache) {
    runtime::EngineOptions eo;
    eo.slots = 1;
    eo.max_queue = 1;
    if (!image_cache) eo.image_cache_mb = 0;
    return runtime::Engine::create(m, eo, so);
}

// SA_RESTART: a Ctrl-C while chat mode waits for a line must not end the read.
void install_sigint() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
}

int session_error(const base::Status& st) {
    return fail(st.code() == ErrorCode::kResourceExhausted ? kExitResource : kExitOther, st,
                "lower -c/--ctx-size or --image-max-tokens");
}

// Chat mode: one engine slot for the whole chat (its KV carries the conversation from turn to
// turn); the turns come from stdin.
int run_interactive(const RunOptions& o, const model::Model& m, const runtime::SessionOptions& so,
                    const image::PreprocessConfig& pp) {
    base::Result<std::unique_ptr<runtime::Engine>> engine = create_engine(m, so, true);
    if (!engine.ok()) return session_error(engine.status());
    install_sigint();
    return run_chat(o, m, *engine.value(), pp, generate_params(o, m), &g_interrupted);
}

// --draw-boxes: the first image, decoded again as the user gave it, with the boxes drawn.
base::Status draw_boxes_file(const RunOptions& o, const runtime::PreparedPrompt& prompt,
                             const std::vector<std::uint8_t>& stdin_image,
                             const std::vector<GroundingItem>& boxes) {
    if (prompt.infos.empty()) {
        return base::error(ErrorCode::kInvalidArgument, "--draw-boxes: the prompt has no image");
    }
    const std::string& path = prompt.infos[0].path;
    base::Result<io::Image> image =
        path == "stdin" && !stdin_image.empty()
            ? io::decode_image(std::as_bytes(std::span(stdin_image)), io::ImageLimits{}, path)
            : io::load_image(path, io::ImageLimits{});
    QVL_TRY(image.status());
    io::Image& im = image.value();
    draw_grounding(boxes, 0, &im);
    QVL_TRY(io::write_png(o.draw_boxes, im));
    if (o.verbosity >= 0 && !o.json) {
        std::fprintf(
            stderr, "qvl-run: %zu grounding item(s) drawn into %s\n",
            std::size_t(std::count_if(boxes.begin(), boxes.end(),
                                      [](const GroundingItem& b) { return b.image == 0; })),
            o.draw_boxes.c_str());
    }
    return base::Status();
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

    std::vector<std::uint8_t> stdin_image;
    if (std::find(o.images.begin(), o.images.end(), "-") != o.images.end()) {
        base::Result<std::vector<std::uint8_t>> bytes = read_stdin_image();
        if (!bytes.ok()) return fail(input_exit(bytes.status()), bytes.status());
        stdin_image = std::move(bytes).value();
    }

    Progress progress(Progress::wanted(o.json, o.verbosity));
    progress.phase("loading the model");
    base::Timer t;
    // A dry run reads no weights: no read-ahead, and the stored layout (the panel rearrangement
    // would make the process hold the text decoder's weights, counted again in its estimate).
    base::Result<std::unique_ptr<model::Model>> loaded = model::Model::load(
        o.model_dir,
        {.weights = o.weights_q8 ? model::WeightFormat::kQ8 : model::WeightFormat::kBF16,
         .panels = !o.dry_run,
         .logits_screen = env.logits_screen && !o.dry_run,
         .read_ahead = !o.dry_run});
    if (!loaded.ok()) {
        return fail(kExitModel, loaded.status(),
                    "-m takes a Hugging Face Qwen3-VL folder (config.json, model.safetensors, "
                    "tokenizer.json)");
    }
    const model::Model& m = *loaded.value();
    const double load_ms = t.elapsed_ms();
    progress.clear();

    const runtime::SessionOptions so = session_options(o, env);
    image::PreprocessConfig pp = runtime::effective_preprocess(m, so);
    // Without --dump-pixels only a model whose channels need the unfused patch embedding gets
    // pixel_values (image::fused_patch_embed_possible decides); the fused one reads the pixels.
    pp.pixel_values = !o.dump_pixels.empty();
    if (o.interactive) return run_interactive(o, m, so, pp);
    base::Result<runtime::PreparedPrompt> prepared = base::Status();
    if (o.raw) {
        prepared = runtime::prepare_raw_prompt(m, text);
    } else {
        base::Result<std::vector<text::ChatMessage>> messages =
            build_messages(o, text, stdin_image);
        if (!messages.ok()) return fail(kExitInput, messages.status());
        prepared = runtime::prepare_chat_prompt(m, messages.value(), pp, io::ImageLimits{});
    }
    if (!prepared.ok()) return fail(input_exit(prepared.status()), prepared.status());
    runtime::PreparedPrompt& prompt = prepared.value();

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
    if (o.dry_run) return run_dry(o, so, m, prompt);
    if (base::Status fits = runtime::check_context_fits(
            0, std::int64_t(prompt.ids.size()) + o.n_predict, o.ctx_size,
            fmt::format("the prompt of {} tokens plus -n {}", prompt.ids.size(), o.n_predict));
        !fits.ok()) {
        return fail(kExitResource, fits,
                    "raise -c/--ctx-size, lower -n, or lower --image-max-tokens");
    }

    base::Result<std::unique_ptr<runtime::Engine>> created = create_engine(m, so, false);
    if (!created.ok()) return session_error(created.status());
    runtime::Engine& engine = *created.value();

    // The images move to the request (the report needs only their infos): no second copy of
    // their pixels.
    const int image_count = int(prompt.images.size());
    runtime::Request request;
    request.prompt.images = std::move(prompt.images);
    prompt.images.clear();
    request.prompt.ids = prompt.ids;
    request.prompt.infos = prompt.infos;
    request.prompt.image_decode_ms = prompt.image_decode_ms;
    request.prompt.preprocess_ms = prompt.preprocess_ms;
    request.params = generate_params(o, m);
    install_sigint();
    std::string dump_error;
    if (!o.json) {
        request.on_text = [](std::string_view piece, std::int32_t) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
        };
    }
    // The vision tower's blocks, counted as they finish (only while it runs: no cost to decode).
    // The callbacks run on the engine's thread while this one waits in run_turn.
    const int vision_blocks = m.config().vision.depth * image_count;
    const bool show_blocks =
        Progress::wanted(o.json, o.verbosity) && vision_blocks > 0 && so.trace_dir.empty();
    if (show_blocks) {
        progress.phase("vision tower");
        request.on_vision_node = [&progress, vision_blocks, done = 0](const std::string& name,
                                                                      const float*, int, int,
                                                                      std::ptrdiff_t) mutable {
            if (name.rfind("vision.blocks.", 0) == 0 && name.size() > 4 &&
                name.compare(name.size() - 4, 4, ".out") == 0) {
                progress.step("vision tower: block", ++done, vision_blocks);
            }
        };
    }
    request.after_vision = [&](const runtime::Session& sess) {
        if (show_blocks) progress.phase("reading the prompt");
        if (o.dump_vision.empty()) return;
        const std::span<const float> f = sess.image_features(0);
        const std::int64_t hidden = m.config().text.hidden_size;
        dump_error = f.empty() ? "--dump-vision needs an image"
                               : base::write_npy_f32(o.dump_vision, f,
                                                     {std::int64_t(f.size()) / hidden, hidden});
    };
    request.after_prefill = [&](const runtime::Session& s, int at) {
        progress.clear();
        if (o.dump_logits.empty()) return;
        const std::span<const float> logits = s.logits(at);
        const std::string err =
            base::write_npy_f32(o.dump_logits, logits, {std::int64_t(logits.size())});
        if (dump_error.empty()) dump_error = err;
    };
    const runtime::SamplingParams sampling = request.params.sampling;
    base::Result<runtime::RequestResult> done =
        run_turn(engine, std::move(request), &g_interrupted);
    progress.clear();
    if (!done.ok()) {
        return fail(done.status().code() == ErrorCode::kOutOfRange ? kExitResource : kExitOther,
                    done.status());
    }
    if (!dump_error.empty()) return fail(kExitOther, dump_error);
    const runtime::GenerateResult r = generate_result(done.value());
    if (r.finish_reason == "interrupted") {
        std::fflush(stdout);
        std::fprintf(stderr, "\nqvl-run: interrupted after %zu tokens\n", r.tokens.size());
        return kExitInterrupted;
    }
    std::vector<ImageSize> sizes;
    for (const runtime::ImageInfo& info : prompt.infos) sizes.push_back({info.width, info.height});
    const std::vector<GroundingItem> boxes = find_grounding(r.text, sizes);
    if (!o.draw_boxes.empty()) {
        if (base::Status st = draw_boxes_file(o, prompt, stdin_image, boxes); !st.ok()) {
            return fail(st.code() == ErrorCode::kIo ? kExitOther : input_exit(st), st);
        }
    }

    RunReport report{.prompt = &prompt,
                     .result = &r,
                     .sampling = sampling,
                     .threads = engine.threads(),
                     .threads_reason = o.threads > 0 ? std::string("--threads")
                                                     : base::default_thread_budget().reason,
                     .weights = m.weight_format() == model::WeightFormat::kQ8 ? "q8" : "bf16",
                     .isa = runtime::kernel_isa_name(engine.isa()),
                     .precision = runtime::precision_name(engine.precision()),
                     .load_ms = load_ms,
                     .total_ms = total.elapsed_ms(),
                     .peak_rss_mb = peak_rss_mb(),
                     .boxes_json = boxes.empty() ? std::string() : grounding_json(boxes)};
    if (o.json) {
        std::printf("%s\n", format_json_report(report).c_str());
    } else {
        std::printf("\n");
    }
    if (o.verbosity >= 0) std::fprintf(stderr, "%s", format_timing_block(report).c_str());
    if (so.profile) std::fprintf(stderr, "%s", engine.profile().format().c_str());
    return kExitOk;
}

}  // namespace
}  // namespace qvl::app

// The engine reports errors as Status; only the standard library can throw here (bad_alloc
// outside the budgeted arenas), and even then the contract holds: one error line, exit 1.
int main(int argc, char** argv) try {
    qvl::app::RunOptions options;
    const qvl::app::ParseOutcome outcome =
        qvl::app::parse_args(argc, argv, &options, stdout, stderr, isatty(STDIN_FILENO) != 0);
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
