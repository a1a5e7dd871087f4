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

int main(int argc, char** argv) {
    namespace synth = qvl::synth;
    try {
        CLI::App app{
            "Writes a synthetic Qwen3-VL-2B checkpoint folder: the real config files, "
            "tokenizer files copied from --tokenizer-dir, random bf16 weights.",
            "qvl-synth"};
        std::string out_dir, tokenizer_dir, seed_text = "0";
        int threads = 0;
        bool tiny = false;
        app.add_option("--out", out_dir, "Output folder (created if missing)")->type_name("DIR");
        app.add_option("--tokenizer-dir", tokenizer_dir,
                       "Folder holding tokenizer.json and tokenizer_config.json")
            ->type_name("DIR");
        app.add_option("--seed", seed_text, "Random seed in [0, 2^64) (default 0)")->type_name("N");
        app.add_option("--threads", threads, "Writer threads (default: logical CPUs, max 8)")
            ->type_name("N")
            ->check(CLI::Range(0, 64));
        // For tests: the dimensions of tests/data/tiny-qwen3vl instead of the real ones.
        app.add_flag("--tiny-dims", tiny)->group("");
        app.allow_extras(true);  // reported below, before the missing-flag checks
        std::string usage_error;
        try {
            app.parse(argc, argv);
        } catch (const CLI::CallForHelp& e) {
            return app.exit(e);
        } catch (const CLI::ParseError& e) {
            usage_error = e.what();
            for (char& c : usage_error) c = c == '\n' ? ' ' : c;
        }
        std::uint64_t seed = 0;
        if (usage_error.empty() && !app.remaining().empty()) {
            usage_error = fmt::format("unexpected argument '{}'", app.remaining().front());
        } else if (usage_error.empty() && out_dir.empty()) {
            usage_error = "missing --out DIR";
        } else if (usage_error.empty() && tokenizer_dir.empty()) {
            usage_error = "missing --tokenizer-dir DIR";
        } else if (usage_error.empty()) {
            const char* end = seed_text.data() + seed_text.size();
            const auto [ptr, ec] = std::from_chars(seed_text.data(), end, seed);
            if (seed_text.empty() || ec != std::errc() || ptr != end) {
                usage_error = fmt::format("--seed: '{}' is not an integer in [0, 2^64)", seed_text);
            }
        }
        if (!usage_error.empty()) {
            fmt::print(stderr, "qvl-synth: error: {}\nhint: run 'qvl-synth --help'\n", usage_error);
            return 2;
        }

        synth::SynthOptions options;
        options.out_dir = out_dir;
        options.tokenizer_dir = tokenizer_dir;
        options.seed = seed;
        options.n_threads = threads;
        options.dims = tiny ? synth::tiny_dims() : synth::real_dims();
        const auto start = std::chrono::steady_clock::now();
        const qvl::base::Status status = synth::write_synthetic_checkpoint(options);
        if (!status.ok()) {
            fmt::print(stderr, "qvl-synth: error: {}\n", status.message());
            return 1;
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        fmt::print(stderr, "qvl-synth: wrote {} in {:.1f} s\n", out_dir, seconds);
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "qvl-synth: error: {}\n", e.what());
        return 1;
    }
}
