// qvl-run: answers a prompt about images with a Qwen3-VL model folder. The command-line
// contract (flags, output, exit codes) is stable: scripts depend on it (README, cli.md). Built
// on the public API (qvl/qvl.h) alone.
#include <fmt/format.h>
#include <qvl/qvl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "args.h"
#include "batch.h"
#include "chat_mode.h"
#include "common/exit_codes.h"
#include "common/stopwatch.h"
#include "draw_boxes.h"
#include "dry_run.h"
#include "env.h"
#include "grounding.h"
#include "json_out.h"
#include "progress.h"
#include "run_support.h"

namespace qvl::app {
namespace {

// Set by SIGINT: the request is cancelled (it stops within one token), the text so far is
// flushed and qvl-run exits 130 (the shell's code for an interrupted program); in chat mode only
// the current answer stops.
std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted.store(true); }
constexpr int kExitInterrupted = 130;

// One slot: qvl-run serves one conversation. The one-shot run needs no image-feature cache (its
// image is seen once); chat mode keeps the default so a picture asked about again after /clear
// skips the vision tower.
Result<Engine> create_engine(const Model& m, const SessionOptions& so, bool image_cache) {
    EngineOptions eo;
    eo.session = so;
    eo.slots = 1;
    eo.max_queue = 1;
    if (!image_cache) eo.image_cache_mb = 0;
    return Engine::create(m, eo);
}

// SA_RESTART: a Ctrl-C while chat mode waits for a line must not end the read.
void install_sigint() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
}

int session_error(const Status& st) {
    return fail(st.code() == ErrorCode::kResourceExhausted ? kExitResource : kExitOther, st,
                "lower -c/--ctx-size or --image-max-tokens");
}

// Chat mode: one engine slot for the whole chat (its KV carries the conversation from turn to
// turn); the turns come from stdin.
int run_interactive(const RunOptions& o, const Model& m, const SessionOptions& so) {
    Result<Engine> engine = create_engine(m, so, true);
    if (!engine.ok()) return session_error(engine.status());
    install_sigint();
    return run_chat(o, engine.value(), sampling_from(o, m), &g_interrupted);
}

// --draw-boxes: the first image, decoded again as the user gave it, with the boxes drawn.
Status draw_boxes_file(const RunOptions& o, const PromptFacts& prompt,
                       const std::vector<std::uint8_t>& stdin_image,
                       const std::vector<GroundingItem>& boxes) {
    const std::vector<ImageInfo> images = images_only(prompt.images);
    if (images.empty()) {
        return Status(ErrorCode::kInvalidArgument, "--draw-boxes: the prompt has no image");
    }
    const std::string& path = images[0].name;
    Result<RgbImage> image = decode_image(path == "stdin" && !stdin_image.empty()
                                              ? ContentPart::image_bytes(stdin_image, path)
                                              : ContentPart::image_file(path));
    if (!image.ok()) return image.status();
    RgbImage& im = image.value();
    draw_grounding(boxes, 0, &im);
    if (Status st = write_png(o.draw_boxes, im); !st.ok()) return st;
    if (o.verbosity >= 0 && !o.json) {
        std::fprintf(
            stderr, "qvl-run: %zu grounding item(s) drawn into %s\n",
            std::size_t(std::count_if(boxes.begin(), boxes.end(),
                                      [](const GroundingItem& b) { return b.image == 0; })),
            o.draw_boxes.c_str());
    }
    return {};
}

// The user's text (-p or -f), checked to be UTF-8 before anything is loaded: a missing prompt
// file is an input error before any loading.
int read_user_text(const RunOptions& o, std::string* text) {
    *text = o.prompt;
    if (!o.prompt_file.empty()) {
        Result<std::string> file = read_text_file(o.prompt_file, 64u << 20);
        if (!file.ok()) return fail(kExitInput, file.status());
        *text = std::move(file).value();
    }
    // Offsets must point into what the user wrote, not into the rendered chat prompt.
    if (Status utf8 = check_utf8(*text); !utf8.ok()) {
        return fail(kExitInput, fmt::format("{}: {}", o.prompt_file.empty() ? "-p" : o.prompt_file,
                                            utf8.message()));
    }
    return -1;
}

// --tokenize: the prompt's ids, as JSON or space-separated.
int print_tokens(const RunOptions& o, const std::vector<std::int32_t>& ids) {
    if (o.json) {
        std::printf("{\"prompt_tokens\": %s}\n", json_int_array(ids).c_str());
    } else {
        for (std::size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
        std::printf("\n");
    }
    return kExitOk;
}

// --dump-pixels: the first image's normalized patches, or the first video's.
int dump_pixels(const RunOptions& o, const Prompt& prompt) {
    if (prompt.images().empty()) return fail(kExitUsage, "--dump-pixels needs an image or a video");
    int rows = 0, cols = 0;
    const std::span<const float> pixels = prompt.pixel_values(0, &rows, &cols);
    const Status st = write_npy(o.dump_pixels, pixels, {rows, cols});
    return st.ok() ? -1 : fail(kExitOther, st.message());
}

// The progress line and the --dump-vision / --dump-logits files, through the request's tool
// hooks (they run on the engine's thread while this one waits in Engine::generate).
struct RunHooks {
    Progress* progress = nullptr;
    std::string dump_error;

    void attach(const RunOptions& o, const SessionOptions& so, Request* r) {
        const bool show_blocks = Progress::wanted(o.json, o.verbosity) &&
                                 !r->prompt.images().empty() && so.trace_dir.empty();
        if (show_blocks) {
            progress->phase("vision tower");
            r->on_vision_progress = [this](int done, int total) {
                progress->step("vision tower: block", done, total);
                if (done == total) progress->phase("reading the prompt");
            };
        }
        if (!o.dump_vision.empty()) {
            r->on_image_features = [this, &o](std::span<const float> f, int rows, int cols) {
                dump_error = f.empty() ? "--dump-vision needs an image or a video"
                                       : write_npy(o.dump_vision, f, {rows, cols}).message();
            };
        }
        if (!o.dump_logits.empty()) {
            r->on_prompt_logits = [this, &o](std::span<const float> logits) {
                const std::string err =
                    write_npy(o.dump_logits, logits, {std::int64_t(logits.size())}).message();
                if (dump_error.empty()) dump_error = err;
            };
        }
    }
};

// The answer: streamed to stdout (without --json) as it comes, then the report.
int generate_and_report(const RunOptions& o, const Model& m, const SessionOptions& so,
                        Prompt prompt, const std::vector<std::uint8_t>& stdin_image, double load_ms,
                        const Stopwatch& total, Progress& progress) {
    Result<Engine> created = create_engine(m, so, false);
    if (!created.ok()) return session_error(created.status());
    Engine& engine = created.value();
    const PromptFacts facts = PromptFacts::of(prompt);
    Request request{.prompt = std::move(prompt),
                    .max_tokens = o.n_predict,
                    .ignore_eos = o.ignore_eos,
                    .sampling = sampling_from(o, m),
                    .constraint = o.constraint};
    if (!o.json) {
        request.on_piece = [&progress](const Piece& piece) {
            progress.clear();
            std::fwrite(piece.text.data(), 1, piece.text.size(), stdout);
            std::fflush(stdout);
        };
    }
    RunHooks hooks{.progress = &progress};
    hooks.attach(o, so, &request);
    install_sigint();
    Result<Generation> done = engine.generate(std::move(request), &g_interrupted);
    progress.clear();
    if (!done.ok()) {
        return fail(done.status().code() == ErrorCode::kOutOfRange ? kExitResource : kExitOther,
                    done.status());
    }
    if (!hooks.dump_error.empty()) return fail(kExitOther, hooks.dump_error);
    const Generation& r = done.value();
    if (r.finish_reason == "cancelled") {
        std::fflush(stdout);
        std::fprintf(stderr, "\nqvl-run: interrupted after %zu tokens\n", r.tokens.size());
        return kExitInterrupted;
    }
    std::vector<ImageSize> sizes;
    for (const ImageInfo& info : images_only(facts.images)) {
        sizes.push_back({info.width, info.height});
    }
    const std::vector<GroundingItem> boxes = find_grounding(r.text, sizes);
    if (!o.draw_boxes.empty()) {
        if (Status st = draw_boxes_file(o, facts, stdin_image, boxes); !st.ok()) {
            return fail(st.code() == ErrorCode::kIo ? kExitOther : input_exit(st), st);
        }
    }
    std::string threads_reason = "--threads";
    if (o.threads <= 0) default_threads(&threads_reason);
    const std::string isa = engine.isa();
    const RunReport report{.prompt = &facts,
                           .result = &r,
                           .threads = engine.threads(),
                           .threads_reason = threads_reason,
                           .weights = m.weights() == Weights::kQ8   ? "q8"
                                      : m.weights() == Weights::kQ4 ? "q4"
                                                                    : "bf16",
                           .vision_weights = o.vision_q8 ? "q8" : "bf16",
                           .isa = isa.c_str(),
                           .precision = precision_name(engine.precision()),
                           .load_ms = load_ms,
                           .total_ms = total.elapsed_ms(),
                           .peak_rss_mb = peak_rss_mb(),
                           .boxes_json = boxes.empty() ? std::string() : grounding_json(boxes),
                           .logprobs_model = o.logprobs >= 0 ? &m : nullptr};
    std::printf("%s\n", o.json ? format_json_report(report).c_str() : "");
    if (o.verbosity >= 0) std::fprintf(stderr, "%s", format_timing_block(report).c_str());
    if (so.profile) std::fprintf(stderr, "%s", engine.profile_report().c_str());
    return kExitOk;
}

// Everything after the model is loaded: the prompt, then --tokenize, --dump-pixels, --dry-run
// or the answer.
int run_prompt(const RunOptions& o, const Model& m, const SessionOptions& so,
               const std::string& text, const std::vector<std::uint8_t>& stdin_image,
               double load_ms, const Stopwatch& total, Progress& progress) {
    Result<Prompt> prepared = Prompt();
    if (o.raw) {
        prepared = m.prepare_raw(text);
    } else {
        Result<std::vector<Message>> messages = build_messages(o, text, stdin_image);
        if (!messages.ok()) return fail(kExitInput, messages.status());
        prepared = m.prepare(messages.value(), so, !o.dump_pixels.empty());
    }
    if (!prepared.ok()) return fail(input_exit(prepared.status()), prepared.status());
    Prompt& prompt = prepared.value();
    if (o.tokenize) return print_tokens(o, prompt.token_ids());
    if (!o.dump_pixels.empty()) {
        if (const int code = dump_pixels(o, prompt); code >= 0) return code;
    }
    if (o.dry_run) return run_dry(o, so, m, prompt);
    const std::size_t n = prompt.token_ids().size();
    if (Status fits = check_fits(std::int64_t(n) + o.n_predict, o.ctx_size,
                                 fmt::format("the prompt of {} tokens plus -n {}", n, o.n_predict));
        !fits.ok()) {
        return fail(kExitResource, fits,
                    "raise -c/--ctx-size, lower -n, or lower --image-max-tokens");
    }
    return generate_and_report(o, m, so, std::move(prompt), stdin_image, load_ms, total, progress);
}

int run(const RunOptions& o, const EnvOptions& env) {
    if (o.verbosity < 0) set_log_level(LogLevel::kError);
    if (o.verbosity > 0) set_log_level(LogLevel::kInfo);
    if (!o.batch_file.empty()) return run_batch(o, env);
    const Stopwatch total;
    std::string text;
    if (const int code = read_user_text(o, &text); code >= 0) return code;
    std::vector<std::uint8_t> stdin_image;  // or video: "-" is given once (args_checks.cpp)
    if (std::any_of(o.media.begin(), o.media.end(),
                    [](const auto& m) { return m.second == "-"; })) {
        Result<std::vector<std::uint8_t>> bytes = read_stdin_image();
        if (!bytes.ok()) return fail(input_exit(bytes.status()), bytes.status());
        stdin_image = std::move(bytes).value();
    }

    Progress progress(Progress::wanted(o.json, o.verbosity));
    progress.phase("loading the model");
    const Stopwatch load;
    // A dry run reads no weights (ModelOptions::for_generation).
    Result<Model> loaded =
        Model::load(o.model_dir, model_options(o, env.logits_screen, !o.dry_run));
    if (!loaded.ok()) {
        return fail(kExitModel, loaded.status(),
                    "-m takes a Hugging Face Qwen3-VL folder (config.json, model.safetensors, "
                    "tokenizer.json)");
    }
    const Model& m = loaded.value();
    const double load_ms = load.elapsed_ms();
    for (const auto& [id, bias] : o.logit_bias) {
        if (id >= m.vocab_size()) {
            return fail(kExitUsage, fmt::format("--logit-bias: token id {} is outside the "
                                                "vocabulary of {} ids",
                                                id, m.vocab_size()));
        }
    }
    progress.clear();
    const SessionOptions so = session_options(o, env);
    if (o.interactive) return run_interactive(o, m, so);
    return run_prompt(o, m, so, text, stdin_image, load_ms, total, progress);
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
    if (const int code = qvl::app::load_output_grammar(&options); code >= 0) return code;
    qvl::app::EnvOptions env;
    if (const int code = qvl::app::read_env_options(&env, stderr); code >= 0) return code;
    if (options.version) {
        const qvl::Result<std::string> isa = qvl::kernel_tier(env.isa);
        std::printf("qvl-run %s (isa %s)\n", qvl::version(), isa.ok() ? isa.value().c_str() : "?");
        return 0;
    }
    return qvl::app::run(options, env);
} catch (const std::exception& e) {
    std::fprintf(stderr, "qvl-run: error: %s\n", e.what());
    return 1;
}
