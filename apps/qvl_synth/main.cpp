// qvl-synth: writes a full-size synthetic Qwen3-VL-2B checkpoint (real configuration files,
// random bf16 weights) for benchmarks, since speed does not depend on the weights' values.
//   qvl-synth --out DIR --tokenizer-dir DIR [--seed N]
// Exit 0 on success, 2 on a usage error, 1 on any other error; errors are one line
// "qvl-synth: error: ..." on stderr.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <system_error>

#include "synth_checkpoint.h"

namespace {

namespace synth = qvl::synth;

// The flags as given; seed_text is converted after parsing so the message names the value.
struct SynthFlags {
    std::string out_dir, tokenizer_dir, seed_text = "0";
    int threads = 0;
    bool tiny = false;
};

void add_flags(CLI::App& app, SynthFlags* f) {
    app.add_option("--out", f->out_dir, "Output folder (created if missing)")->type_name("DIR");
    app.add_option("--tokenizer-dir", f->tokenizer_dir,
                   "Folder holding tokenizer.json and tokenizer_config.json")
        ->type_name("DIR");
    app.add_option("--seed", f->seed_text, "Random seed in [0, 2^64) (default 0)")->type_name("N");
    app.add_option("--threads", f->threads, "Writer threads (default: logical CPUs, max 8)")
        ->type_name("N")
        ->check(CLI::Range(0, 64));
    // For tests: the dimensions of tests/data/tiny-qwen3vl instead of the real ones.
    app.add_flag("--tiny-dims", f->tiny)->group("");
    app.allow_extras(true);  // reported by usage_error, before the missing-flag checks
}

// The first usage error after a parse that did not throw (empty: none); sets *seed.
std::string usage_error(const CLI::App& app, const SynthFlags& f, std::uint64_t* seed) {
    if (!app.remaining().empty()) {
        return fmt::format("unexpected argument '{}'", app.remaining().front());
    }
    if (f.out_dir.empty()) return "missing --out DIR";
    if (f.tokenizer_dir.empty()) return "missing --tokenizer-dir DIR";
    const char* end = f.seed_text.data() + f.seed_text.size();
    const auto [ptr, ec] = std::from_chars(f.seed_text.data(), end, *seed);
    if (f.seed_text.empty() || ec != std::errc() || ptr != end) {
        return fmt::format("--seed: '{}' is not an integer in [0, 2^64)", f.seed_text);
    }
    return {};
}

int write_checkpoint(const SynthFlags& f, std::uint64_t seed) {
    synth::SynthOptions options;
    options.out_dir = f.out_dir;
    options.tokenizer_dir = f.tokenizer_dir;
    options.seed = seed;
    options.n_threads = f.threads;
    options.dims = f.tiny ? synth::tiny_dims() : synth::real_dims();
    const auto start = std::chrono::steady_clock::now();
    const qvl::base::Status status = synth::write_synthetic_checkpoint(options);
    if (!status.ok()) {
        fmt::print(stderr, "qvl-synth: error: {}\n", status.message());
        return 1;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "qvl-synth: wrote {} in {:.1f} s\n", f.out_dir, seconds);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        CLI::App app{
            "Writes a synthetic Qwen3-VL-2B checkpoint folder: the real config files, "
            "tokenizer files copied from --tokenizer-dir, random bf16 weights.",
            "qvl-synth"};
        SynthFlags flags;
        add_flags(app, &flags);
        std::string error;
        std::uint64_t seed = 0;
        try {
            app.parse(argc, argv);
            error = usage_error(app, flags, &seed);
        } catch (const CLI::CallForHelp& e) {
            return app.exit(e);
        } catch (const CLI::ParseError& e) {
            error = e.what();
            for (char& c : error) c = c == '\n' ? ' ' : c;
        }
        if (!error.empty()) {
            fmt::print(stderr, "qvl-synth: error: {}\nhint: run 'qvl-synth --help'\n", error);
            return 2;
        }
        return write_checkpoint(flags, seed);
    } catch (const std::exception& e) {
        fmt::print(stderr, "qvl-synth: error: {}\n", e.what());
        return 1;
    }
}
