// Command-line parsing for qvl-run: every flag of the CLI contract (shared docs/cli.md) parsed
// and checked for syntax, ranges and conflicts. Files are NOT opened here: the caller reports a
// missing model folder (exit 3) or a missing image / prompt / messages file (exit 4) itself.
#pragma once

#include <qvl/qvl.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qvl::app {

struct RunOptions {
    std::string model_dir;            // -m, --model (required unless --help / --version)
    std::vector<std::string> images;  // -i, --image, in the order given ("-" = stdin)
    std::vector<std::string> videos;  // --video, likewise
    // -i and --video together in the order given ({is_video, path}; "file://PATH" already
    // turned into PATH): the user turn's visual parts.
    std::vector<std::pair<bool, std::string>> media;
    double video_fps = 0;       // --video-fps, in (0, 1000]; 0: the model's sampling
    int video_max_frames = 0;   // --video-max-frames, in [1, 100000]; 0: the model's
    std::string prompt;         // -p, --prompt
    bool prompt_given = false;  // -p was present (an empty prompt is still a prompt)
    std::string prompt_file;    // -f, --file
    std::string system;         // -s, --system
    std::string messages_file;  // --messages
    bool raw = false;           // --raw
    int n_predict = 128;        // -n, --n-predict, in [0, 1 << 20]
    bool ignore_eos = false;    // --ignore-eos
    // Sampling overrides; unset = the model's generation_config.json value.
    std::optional<float> temperature;   // --temp, >= 0 (0 = greedy)
    std::optional<int> top_k;           // --top-k, >= 0 (0 = off)
    std::optional<float> top_p;         // --top-p, in (0, 1]
    std::optional<std::uint64_t> seed;  // --seed
    int ctx_size = 4096;                // -c, --ctx-size, in [16, 1 << 20]
    int threads = 0;                    // -t, --threads, in [0, 1024]; 0 = physical cores
    bool weights_q8 = false;            // --weights q8 (int8 text decoder) | bf16 (default)
    bool weights_q4 = false;            // --weights q4 (4-bit text decoder)
    bool vision_q8 = false;             // --vision-weights q8 (int8 vision tower) | bf16
    std::optional<int> image_min_tokens, image_max_tokens;  // >= 1, min <= max
    bool json = false;                                      // --json
    bool tokenize = false;                                  // --tokenize
    std::string dump_pixels, dump_vision, dump_logits;      // --dump-*: output .npy paths
    std::string draw_boxes;    // --draw-boxes OUT.png: grounding boxes drawn on the first image
    bool dry_run = false;      // --dry-run: report the cost, run nothing
    bool interactive = false;  // --interactive, or no prompt source with stdin not a terminal
    int verbosity = 0;         // -1 quiet, 0 normal, 1 verbose
    std::string batch_file;    // --batch: one request per JSON line (apps/qvl_run/batch.h)
    int parallel = 1;          // --parallel, in [1, 32]: conversations at once in --batch
    // --admission-budget-ms, in [0, 1e6]: --batch admits a conversation in pieces of about this
    // long between the decode steps of the running ones (runtime::EngineOptions; 0: unbounded).
    double admission_budget_ms = 500;
    std::string output_file;  // -o, --output: --batch results (default stdout)
    bool version = false;     // --version (the caller prints it)
    bool help = false;        // --help (already printed)

    // Penalties; unset = the repetition penalty of generation_config.json, no presence penalty.
    std::optional<float> repeat_penalty;    // --repeat-penalty, > 0 (1 = off)
    std::optional<float> presence_penalty;  // --presence-penalty, in [-2, 2] (0 = off)
    // --logprobs N (0..20; -1 = off): each generated token's log-probability and its N best
    // alternatives in --json. --logit-bias ID=BIAS (repeatable): BIAS in [-100, 100] added to
    // that token's logit before sampling.
    int logprobs = -1;
    std::vector<std::pair<std::int32_t, float>> logit_bias;

    // Constrained output (at most one): --json-schema FILE, --grammar FILE (GBNF); the compiled
    // constraint is filled in by load_output_grammar (run_support.h) before the run.
    std::string json_schema_file, grammar_file;
    OutputConstraint constraint;
};

struct ParseOutcome {
    // -1: continue running; 0: done (help printed, nothing else to do); 2: usage error;
    // 1: the parser itself failed (out of memory).
    int exit_code = -1;
};

// Parses argv (argv[0] is the program name) into *options, which starts from the defaults above.
// Without -p, -f or --messages, qvl-run chats on stdin (--interactive) when stdin is not a
// terminal (stdin_is_terminal false), like llama.cpp's chat mode; on a terminal that is the
// usage error "no prompt".
// A usage error prints exactly one line "qvl-run: error: <what>" to err, optionally followed by
// one "hint: ..." line, and returns exit_code 2. --help prints the usage to out and returns 0
// with options->help set. --version only sets options->version and returns -1: the caller prints
// the version and the ISA in use, then exits 0. Never throws.
ParseOutcome parse_args(int argc, const char* const* argv, RunOptions* options, std::FILE* out,
                        std::FILE* err, bool stdin_is_terminal = true);

// The usage text --help prints.
std::string usage_text();

}  // namespace qvl::app
