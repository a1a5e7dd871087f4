// The pieces of qvl-run's command-line parser (args.cpp), shared by its files: the CLI11 app
// with every flag (args_flags.cpp), the conversion of numeric flags (args_numbers.cpp) and the
// checks between flags (args_checks.cpp). Internal to qvl-run; args.h is the interface.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "args.h"

namespace qvl::app {

constexpr long long kMaxTokens = 1LL << 20;

// One usage error: the line "qvl-run: error: <message>", then "hint: <hint>" when not empty.
struct UsageError {
    std::string message;
    std::string hint;
};

// Numeric flags arrive as text and are converted after parsing (see convert_numbers).
struct NumberTexts {
    std::string n_predict, temperature, top_k, top_p, seed, ctx_size, threads;
    std::string weights, vision_weights;
    std::string image_min_tokens, image_max_tokens, parallel, admission_budget;
    std::string repeat_penalty, presence_penalty;
    std::string video_fps, video_max_frames;
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
    CLI::Option* image = nullptr;
    CLI::Option* video = nullptr;
};

// Registers every flag on `app`, writing into *o, *t and the -v/-q counts.
Flags build_app(CLI::App& app, RunOptions* o, NumberTexts* t, int* verbose_count, int* quiet_count);

// Converts each numeric flag that was given and checks its range.
std::optional<UsageError> convert_numbers(const CLI::App& app, const NumberTexts& t, RunOptions* o);

// Conflicts and requirements between flags (after numbers are converted); sets o->verbosity,
// o->prompt_given and o->interactive (no prompt source, stdin not a terminal).
std::optional<UsageError> check_combinations(const Flags& f, RunOptions* o, bool stdin_is_terminal);

}  // namespace qvl::app
