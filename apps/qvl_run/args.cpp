// qvl-run's command line: CLI11 does the tokenising (short/long names, "--x=v", repeated -i);
// the flags are registered in args_flags.cpp, numbers converted in args_numbers.cpp and flag
// combinations checked in args_checks.cpp. This file runs the parse and reports its errors.
// CLI11 throws; nothing escapes parse_args.
#include "args.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string_view>

#include "args_logits.h"
#include "args_parse.h"

namespace qvl::app {
namespace {

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
                          "only -i/--image, --video and --logit-bias may be repeated"};
    }
    return UsageError{what, "run 'qvl-run --help' for the list of options"};
}

// -i and --video in the order the command line gives them (CLI11 keeps each option's values
// apart; its parse order says how they interleave).
void order_media(const CLI::App& app, const Flags& f, RunOptions* o) {
    std::size_t image = 0, video = 0;
    o->media.clear();
    for (const CLI::Option* opt : app.parse_order()) {
        if (opt == f.image && image < o->images.size()) {
            o->media.emplace_back(false, o->images[image++]);
        } else if (opt == f.video && video < o->videos.size()) {
            o->media.emplace_back(true, o->videos[video++]);
        }
    }
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
        order_media(app, flags, options);
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
