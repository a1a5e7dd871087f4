// qvl-run's command line: CLI11 does the tokenising (short/long names, "--x=v", repeated -i);
// everything numeric is taken as text and converted here, so every message has one shape and
// names the flag and the value. CLI11 throws; nothing escapes parse_args.
#include "args.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <string_view>
#include <system_error>

#include "args_logits.h"

namespace qvl::app {
namespace {

constexpr long long kMaxTokens = 1LL << 20;

struct UsageError {
    std::string message;
    std::string hint;
};

const char* const kUsage =
    "Usage: qvl-run -m MODEL_DIR [-i IMAGE]... [-p PROMPT | -f PROMPT_FILE] [options]\n"
    "       qvl-run -m MODEL_DIR --messages FILE [options]\n"
    "       qvl-run -m MODEL_DIR --batch FILE.jsonl [--parallel N] [-o OUT.jsonl] [options]\n"

    "       qvl-run -m MODEL_DIR --interactive [-i IMAGE]... [-s SYSTEM] [options]\n";

const char* const kDescription =
    "Answers a prompt about images with a Qwen3-VL model (a Hugging Face folder).\n"
    "Generated text goes to stdout; progress and timings go to stderr.\n";

class QvlFormatter : public CLI::Formatter {
  public:
    std::string make_usage(const CLI::App* /*app*/, std::string /*name*/) const override {
        return std::string(kUsage) + "\n" + kDescription + "\n";
    }
};

// Numeric flags arrive as text and are converted after parsing (see convert_numbers).
struct NumberTexts {
    std::string n_predict, temperature, top_k, top_p, seed, ctx_size, threads;
    std::string weights;
    std::string image_min_tokens, image_max_tokens, parallel, admission_budget;
    std::string repeat_penalty, presence_penalty;
    std::string logprobs;
    std::vector<std::string> logit_bias;
};

struct Flags {
    CLI::Option* prompt = nullptr;
    CLI::Option* prompt_file = nullptr;
    CLI::Option* system = nullptr;
    CLI::Option* messages = nullptr;
    CLI::Option* model = nullptr;
    CLI::Option* verbose = nullptr;
    CLI::Option* quiet = nullptr;
    CLI::Option* batch = nullptr;
    CLI::Option* output = nullptr;
    CLI::Option* parallel = nullptr;
    CLI::Option* admission_budget = nullptr;
    CLI::Option* interactive = nullptr;
};

const char* const kFooter =
    "Exit codes: 0 success, 1 other error, 2 usage error, 3 model folder or weights invalid,\n"
    "4 input (image, prompt file) invalid, 5 resource limit (context or memory budget).";

Flags build_app(CLI::App& app, RunOptions* o, NumberTexts* t, int* verbose_count,
                int* quiet_count) {
    Flags f;
    auto formatter = std::make_shared<QvlFormatter>();
    formatter->column_width(32);
    app.formatter(formatter);
    app.footer(kFooter);
    app.allow_extras(true);  // unknown flags are reported by parse_args in one line

    const std::string in = "Input";
    f.model = app.add_option("-m,--model", o->model_dir, "Hugging Face model folder")
                  ->type_name("DIR")
                  ->group(in);
    app.add_option("-i,--image", o->images,
                   "JPEG, PNG, WebP or GIF image (- = stdin, file://PATH); repeatable, in order")
        ->type_name("FILE")
        ->allow_extra_args(false)
        ->group(in);
    f.prompt =
        app.add_option("-p,--prompt", o->prompt, "The user message")->type_name("TEXT")->group(in);
    f.prompt_file = app.add_option("-f,--file", o->prompt_file, "Read the user message from FILE")
                        ->type_name("FILE")
                        ->group(in);
    f.system = app.add_option("-s,--system", o->system, "Optional system message")
                   ->type_name("TEXT")
                   ->group(in);
    f.messages = app.add_option("--messages", o->messages_file,
                                "Whole chat as JSON messages (replaces -i/-p/-s)")
                     ->type_name("FILE")
                     ->group(in);
    app.add_flag("--raw", o->raw, "Raw text prompt: no chat template, no images")->group(in);
    f.batch = app.add_option("--batch", o->batch_file,
                             "One request per JSON line: {\"id\", \"messages\", ...}")
                  ->type_name("FILE")
                  ->group(in);
    f.parallel = app.add_option("--parallel", t->parallel,
                                "--batch: conversations decoded at once (default 1)")
                     ->type_name("N")
                     ->group(in);
    f.admission_budget =
        app.add_option("--admission-budget-ms", t->admission_budget,
                       "--batch: admit a conversation in pieces of about MS between the tokens "
                       "of the running ones (default 500; 0: whole images, 512-token chunks)")
            ->type_name("MS")
            ->group(in);
    f.interactive = app.add_flag("--interactive", o->interactive,
                                 "Chat on stdin: one turn per line; /image PATH, /clear, /exit")
                        ->group(in);

    const std::string gen = "Generation";
    app.add_option("-n,--n-predict", t->n_predict, "Maximum new tokens (default 128)")
        ->type_name("N")
        ->group(gen);
    app.add_flag("--ignore-eos", o->ignore_eos, "Keep generating past end-of-turn tokens")
        ->group(gen);
    app.add_option("--temp", t->temperature, "Temperature; 0 = greedy (default: model's)")
        ->type_name("F")
        ->group(gen);
    app.add_option("--top-k", t->top_k, "Top-k; 0 = off (default: model's)")
        ->type_name("N")
        ->group(gen);
    app.add_option("--top-p", t->top_p, "Top-p in (0, 1] (default: model's)")
        ->type_name("F")
        ->group(gen);
    app.add_option("--repeat-penalty", t->repeat_penalty,
                   "Repetition penalty > 0 over prompt and output; 1 = off (default: model's)")
        ->type_name("F")
        ->group(gen);
    app.add_option("--presence-penalty", t->presence_penalty,
                   "Presence penalty in [-2, 2] over output tokens (default 0)")
        ->type_name("F")
        ->group(gen);
    app.add_option("--logit-bias", t->logit_bias,
                   "Add BIAS in [-100, 100] to token ID's logit before sampling (repeatable)")
        ->type_name("ID=BIAS")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->group(gen);
    app.add_option("--logprobs", t->logprobs,
                   "With --json: each token's log-probability and its N best alternatives, 0..20")
        ->type_name("N")
        ->group(gen);
    app.add_option("--seed", t->seed, "Sampling seed (default: random, reported)")
        ->type_name("N")
        ->group(gen);
    app.add_option("-c,--ctx-size", t->ctx_size, "KV-cache size in tokens (default 4096)")
        ->type_name("N")
        ->group(gen);
    app.add_option("-t,--threads", t->threads, "Worker threads (default: physical cores)")
        ->type_name("N")
        ->group(gen);
    app.add_option(
           "--weights", t->weights,
           "Text decoder weights: bf16 (as stored, default) or q8 (int8, quantized at load)")
        ->type_name("bf16|q8")
        ->group(gen);
    app.add_option("--image-min-tokens", t->image_min_tokens, "Minimum visual tokens per image")
        ->type_name("N")
        ->group(gen);
    app.add_option("--image-max-tokens", t->image_max_tokens, "Maximum visual tokens per image")
        ->type_name("N")
        ->group(gen);

    const std::string out = "Output";
    app.add_flag("--json", o->json, "Print one JSON object at the end instead of streaming")
        ->group(out);
    app.add_flag("--tokenize", o->tokenize, "Only tokenize the prompt, print the ids and exit")
        ->group(out);
    app.add_option("--dump-pixels", o->dump_pixels,
                   "Write the first image's pixel_values (float32 .npy)")
        ->type_name("FILE")
        ->group(out);
    app.add_option("--dump-vision", o->dump_vision,
                   "Write the first image's vision-tower output (float32 .npy)")
        ->type_name("FILE")
        ->group(out);
    app.add_option("--dump-logits", o->dump_logits,
                   "Write the logits at the last prompt position (float32 .npy)")
        ->type_name("FILE")
        ->group(out);
    f.output = app.add_option("-o,--output", o->output_file,
                              "--batch: write result lines to FILE (default stdout)")
                   ->type_name("FILE")
                   ->group(out);
    app.add_option("--draw-boxes", o->draw_boxes,
                   "Draw the answer's grounding boxes on the first image (PNG)")
        ->type_name("OUT.png")
        ->group(out);
    app.add_flag("--dry-run", o->dry_run,
                 "Report images, tokens, memory and time estimates; run nothing")
        ->group(out);
    f.verbose = app.add_flag("-v,--verbose", *verbose_count, "More progress on stderr")->group(out);
    f.quiet = app.add_flag("-q,--quiet", *quiet_count, "Errors only on stderr")->group(out);
    app.add_flag("--version", o->version, "Print the version and the ISA in use, then exit")
        ->group(out);
    // Created last so that the help lists Input, Generation, Output in that order.
    app.set_help_flag("-h,--help", "Print this help and exit")->group(out);
    return f;
}

// Flag spellings for suggestions: every long name the parser knows.
std::vector<std::string> long_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app.get_options()) {
        for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    }
    return names;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
            diag = up;
        }
    }
    return row[b.size()];
}

bool looks_like_option(std::string_view s) {
    if (s.size() < 2 || s[0] != '-') return false;
    const char c = s[1];
    return !(c >= '0' && c <= '9') && c != '.';
}

// The first argument CLI11 did not consume, as a usage error.
std::optional<UsageError> check_leftovers(const CLI::App& app) {
    const std::vector<std::string> rest = app.remaining();
    for (std::size_t i = 0; i < rest.size(); ++i) {
        const std::string& arg = rest[i];
        if (arg == "--") continue;
        const bool after_dashes = i > 0 && rest[i - 1] == "--";
        if (!after_dashes && looks_like_option(arg)) {
            const std::string name = arg.substr(0, arg.find('='));
            std::string best;
            std::size_t best_distance = 3;
            for (const std::string& known : long_names(app)) {
                std::string normalized = name;
                std::replace(normalized.begin(), normalized.end(), '_', '-');
                const std::size_t d = edit_distance(normalized, known);
                if (d < best_distance) best_distance = d, best = known;
            }
            return UsageError{fmt::format("unknown option '{}'", name),
                              best.empty() ? "run 'qvl-run --help' for the list of options"
                                           : fmt::format("did you mean '{}'?", best)};
        }
        return UsageError{fmt::format("unexpected argument '{}'", arg),
                          "give images with -i and the prompt with -p, quoted if it has spaces"};
    }
    return std::nullopt;
}

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

// Converts each numeric flag that was given and checks its range.
std::optional<UsageError> convert_numbers(const CLI::App& app, const NumberTexts& t,
                                          RunOptions* o) {
    auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
    long long v = 0;
    if (given("--n-predict")) {
        if (auto e = to_int("--n-predict", t.n_predict, 0, kMaxTokens, &v)) return e;
        o->n_predict = int(v);
    }
    if (given("--ctx-size")) {
        if (auto e = to_int("--ctx-size", t.ctx_size, 16, kMaxTokens, &v)) return e;
        o->ctx_size = int(v);
    }
    if (given("--threads")) {
        if (auto e = to_int("--threads", t.threads, 0, 1024, &v)) {
            e->hint = "0 means one thread per physical core";
            return e;
        }
        o->threads = int(v);
    }
    if (given("--weights")) {
        if (t.weights != "bf16" && t.weights != "q8") {
            return UsageError{fmt::format("--weights: '{}' is not bf16 or q8", t.weights), {}};
        }
        o->weights_q8 = t.weights == "q8";
    }
    if (given("--top-k")) {
        if (auto e = to_int("--top-k", t.top_k, 0, 1LL << 30, &v)) return e;
        o->top_k = int(v);
    }
    if (given("--image-min-tokens")) {
        if (auto e = to_int("--image-min-tokens", t.image_min_tokens, 1, kMaxTokens, &v)) return e;
        o->image_min_tokens = int(v);
    }
    if (given("--image-max-tokens")) {
        if (auto e = to_int("--image-max-tokens", t.image_max_tokens, 1, kMaxTokens, &v)) return e;
        o->image_max_tokens = int(v);
    }
    if (given("--seed")) {
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
    if (given("--parallel")) {
        if (auto e = to_int("--parallel", t.parallel, 1, 32, &v)) return e;
        o->parallel = int(v);
    }
    float f = 0.0f;
    if (given("--admission-budget-ms")) {
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
    if (given("--temp")) {
        if (auto e = to_float("--temp", t.temperature, &f)) return e;
        if (f < 0.0f) return UsageError{fmt::format("--temp: {} is negative", t.temperature), {}};
        o->temperature = f;
    }
    if (given("--top-p")) {
        if (auto e = to_float("--top-p", t.top_p, &f)) return e;
        if (!(f > 0.0f && f <= 1.0f)) {
            return UsageError{fmt::format("--top-p: {} is out of range (0, 1]", t.top_p), {}};
        }
        o->top_p = f;
    }
    if (given("--repeat-penalty")) {
        if (auto e = to_float("--repeat-penalty", t.repeat_penalty, &f)) return e;
        if (!(f > 0.0f)) {
            return UsageError{fmt::format("--repeat-penalty: {} is not above 0", t.repeat_penalty),
                              "1 means no penalty; values above 1 discourage repetition"};
        }
        o->repeat_penalty = f;
    }
    if (given("--presence-penalty")) {
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

// --batch takes its conversations from the file: no other prompt source or single-run output.
std::optional<UsageError> check_batch(const Flags& f, const RunOptions* o) {
    if (o->batch_file.empty()) return UsageError{"--batch: empty path", {}};
    if (f.output->count() > 0 && o->output_file.empty()) {
        return UsageError{"-o/--output: empty path", {}};
    }
    const bool other = o->prompt_given || f.prompt_file->count() > 0 || f.messages->count() > 0 ||
                       f.system->count() > 0 || !o->images.empty() || o->raw || o->json ||
                       o->tokenize || !o->dump_pixels.empty() || !o->dump_vision.empty() ||
                       !o->dump_logits.empty();
    if (other) {
        return UsageError{
            "--batch takes each conversation from its lines: no -p, -f, -i, -s, "
            "--messages, --raw, --json, --tokenize or --dump-*",
            "put each conversation's \"messages\" in the batch file"};
    }
    if (o->image_min_tokens && o->image_max_tokens && *o->image_min_tokens > *o->image_max_tokens) {
        return UsageError{fmt::format("--image-min-tokens {} is above --image-max-tokens {}",
                                      *o->image_min_tokens, *o->image_max_tokens),
                          {}};
    }
    return std::nullopt;
}

// Conflicts and requirements between flags (after numbers are converted).
std::optional<UsageError> check_combinations(const Flags& f, RunOptions* o,
                                             bool stdin_is_terminal) {
    if (f.verbose->count() > 0 && f.quiet->count() > 0) {
        return UsageError{"-v/--verbose and -q/--quiet exclude each other", {}};
    }
    o->verbosity = f.quiet->count() > 0 ? -1 : (f.verbose->count() > 0 ? 1 : 0);
    if (f.model->count() == 0) {
        return UsageError{"missing -m/--model DIR",
                          "qvl-run -m MODEL_DIR -i IMAGE -p \"What is in this image?\""};
    }
    if (o->model_dir.empty()) return UsageError{"-m/--model: empty path", {}};

    o->prompt_given = f.prompt->count() > 0;
    if (f.batch->count() > 0) return check_batch(f, o);
    if (f.parallel->count() > 0 || f.output->count() > 0 || f.admission_budget->count() > 0) {
        return UsageError{"--parallel, --admission-budget-ms and -o/--output go with --batch FILE",
                          {}};
    }
    std::vector<std::string> sources;
    if (o->prompt_given) sources.emplace_back("-p");
    if (f.prompt_file->count() > 0) sources.emplace_back("-f");
    if (f.messages->count() > 0) sources.emplace_back("--messages");
    if (sources.empty() && !o->interactive && !stdin_is_terminal) o->interactive = true;
    if (sources.empty() && !o->interactive) {
        return UsageError{"no prompt: give -p TEXT, -f FILE or --messages FILE",
                          "or chat with --interactive"};
    }
    if (sources.size() > 1) {
        return UsageError{fmt::format("{} exclude each other: give one prompt source",
                                      fmt::join(sources, " and ")),
                          {}};
    }
    if (f.prompt_file->count() > 0 && o->prompt_file.empty()) {
        return UsageError{"-f/--file: empty path", {}};
    }
    if (f.messages->count() > 0) {
        if (o->messages_file.empty()) return UsageError{"--messages: empty path", {}};
        if (!o->images.empty() || f.system->count() > 0) {
            return UsageError{"--messages holds the whole conversation: -i and -s cannot be added",
                              "put images and the system message inside the messages file"};
        }
    }
    if (o->raw) {
        if (!o->images.empty() || f.messages->count() > 0 || f.system->count() > 0) {
            return UsageError{"--raw takes plain text only: no -i, -s or --messages",
                              "write the chat template yourself or drop --raw"};
        }
    }
    int from_stdin = 0;
    for (std::string& image : o->images) {
        if (image.rfind("file://", 0) == 0) image.erase(0, 7);  // a local file URL is its path
        if (image.empty()) return UsageError{"-i/--image: empty path", {}};
        from_stdin += image == "-";
    }
    if (from_stdin > 1) return UsageError{"-i -: stdin holds one image; give it once", {}};
    if (o->interactive) {
        if (f.messages->count() > 0 || f.prompt_file->count() > 0 || o->raw) {
            return UsageError{
                "--interactive reads the turns from stdin: no -f, --messages or --raw", {}};
        }
        if (from_stdin > 0) {
            return UsageError{"-i - reads stdin, which --interactive needs for the turns",
                              "save the image to a file and give its path"};
        }
        if (o->json || o->tokenize || o->dry_run || !o->draw_boxes.empty() ||
            !o->dump_pixels.empty() || !o->dump_vision.empty() || !o->dump_logits.empty()) {
            return UsageError{
                "--interactive streams its answers: no --json, --tokenize, "
                "--dry-run, --draw-boxes or --dump-*",
                {}};
        }
    }
    if (!o->draw_boxes.empty() && o->images.empty() && f.messages->count() == 0) {
        return UsageError{"--draw-boxes needs an image (-i)", {}};
    }
    if (o->image_min_tokens && o->image_max_tokens && *o->image_min_tokens > *o->image_max_tokens) {
        return UsageError{fmt::format("--image-min-tokens {} is above --image-max-tokens {}",
                                      *o->image_min_tokens, *o->image_max_tokens),
                          {}};
    }
    const bool may_have_images = !o->images.empty() || f.messages->count() > 0;
    const std::pair<const char*, const std::string*> dumps[] = {{"--dump-pixels", &o->dump_pixels},
                                                                {"--dump-vision", &o->dump_vision},
                                                                {"--dump-logits", &o->dump_logits}};
    for (const auto& [flag, path] : dumps) {
        if (path->empty()) continue;
        if (std::string_view(flag) != "--dump-logits" && !may_have_images) {
            return UsageError{fmt::format("{} needs an image (-i)", flag), {}};
        }
        if (o->tokenize && std::string_view(flag) != "--dump-pixels") {
            return UsageError{fmt::format("--tokenize stops before {} could be written", flag), {}};
        }
    }
    return std::nullopt;
}

// CLI11's own message ("--prompt: 1 required TEXT missing") rephrased as one line.
UsageError from_cli11(const CLI::ParseError& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    const std::string flag = what.substr(0, what.find(':'));
    if (e.get_name() == "ArgumentMismatch" && what.find("missing") != std::string::npos) {
        return UsageError{fmt::format("{} needs a value", flag), {}};
    }
    if (e.get_name() == "ArgumentMismatch" && what.find("At Most") != std::string::npos) {
        return UsageError{fmt::format("{} given more than once", flag),
                          "only -i/--image may be repeated"};
    }
    return UsageError{what, "run 'qvl-run --help' for the list of options"};
}

void print_error(std::FILE* err, const UsageError& e) {
    fmt::print(err, "qvl-run: error: {}\n", e.message);
    if (!e.hint.empty()) fmt::print(err, "hint: {}\n", e.hint);
}

}  // namespace

std::string usage_text() {
    CLI::App app;
    RunOptions o;
    NumberTexts t;
    int v = 0, q = 0;
    build_app(app, &o, &t, &v, &q);
    return app.help("qvl-run");
}

ParseOutcome parse_args(int argc, const char* const* argv, RunOptions* options, std::FILE* out,
                        std::FILE* err, bool stdin_is_terminal) {
    try {
        CLI::App app;
        NumberTexts texts;
        int verbose_count = 0, quiet_count = 0;
        const Flags flags = build_app(app, options, &texts, &verbose_count, &quiet_count);
        try {
            app.parse(argc, argv);
        } catch (const CLI::CallForHelp&) {
            options->help = true;
            fmt::print(out, "{}", app.help("qvl-run"));
            return ParseOutcome{0};
        } catch (const CLI::ParseError& e) {
            print_error(err, from_cli11(e));
            return ParseOutcome{2};
        }
        std::optional<UsageError> error = check_leftovers(app);
        if (!error) error = convert_numbers(app, texts, options);
        if (!error) {
            if (auto e = convert_logits_flags(texts.logprobs, texts.logit_bias, options))
                error = UsageError{*e, {}};
        }
        if (!error && !options->version) {
            error = check_combinations(flags, options, stdin_is_terminal);
        }
        if (error) {
            print_error(err, *error);
            return ParseOutcome{2};
        }
        return ParseOutcome{-1};
    } catch (const std::exception& e) {
        // Only allocation failure or a CLI11 setup bug can land here.
        fmt::print(err, "qvl-run: error: parsing the command line: {}\n", e.what());
        return ParseOutcome{1};
    }
}

}  // namespace qvl::app
