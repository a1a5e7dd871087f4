// Every qvl-run flag, in the three groups --help lists: Input, Generation, Output.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "args_parse.h"

namespace qvl::app {
namespace {

const char* const kUsage =
    "Usage: qvl-run -m MODEL_DIR [-i IMAGE | --video VIDEO]... [-p PROMPT | -f PROMPT_FILE] "
    "[options]\n"
    "       qvl-run -m MODEL_DIR --messages FILE [options]\n"
    "       qvl-run -m MODEL_DIR --batch FILE.jsonl [--parallel N] [-o OUT.jsonl] [options]\n"

    "       qvl-run -m MODEL_DIR --interactive [-i IMAGE]... [-s SYSTEM] [options]\n";

const char* const kDescription =
    "Answers a prompt about images and videos with a Qwen3-VL model (a Hugging Face folder).\n"
    "Generated text goes to stdout; progress and timings go to stderr.\n";

class QvlFormatter : public CLI::Formatter {
  public:
    std::string make_usage(const CLI::App* /*app*/, std::string /*name*/) const override {
        return std::string(kUsage) + "\n" + kDescription + "\n";
    }
};

const char* const kFooter =
    "Exit codes: 0 success, 1 other error, 2 usage error, 3 model folder or weights invalid,\n"
    "4 input (image, video, prompt file) invalid, 5 resource limit (context or memory budget).";

// Where the prompt and images come from, and --batch's own flags.
void add_input_flags(CLI::App& app, RunOptions* o, NumberTexts* t, Flags* f) {
    const std::string in = "Input";
    f->model = app.add_option("-m,--model", o->model_dir, "Hugging Face model folder")
                   ->type_name("DIR")
                   ->group(in);
    f->image = app.add_option("-i,--image", o->images,
                              "JPEG, PNG, WebP or GIF image (- = stdin, file://PATH); repeatable, "
                              "in order with --video")
                   ->type_name("FILE")
                   ->allow_extra_args(false)
                   ->group(in);
    f->video = app.add_option("--video", o->videos,
                              "MP4, WebM or animated GIF video (- = stdin, file://PATH); "
                              "repeatable, in order with -i")
                   ->type_name("FILE")
                   ->allow_extra_args(false)
                   ->group(in);
    app.add_option("--video-fps", t->video_fps,
                   "Frames sampled per second of video (default: the model's, 2)")
        ->type_name("F")
        ->group(in);
    app.add_option("--video-max-frames", t->video_max_frames,
                   "Most frames sampled from a video (default: the model's)")
        ->type_name("N")
        ->group(in);
    f->prompt =
        app.add_option("-p,--prompt", o->prompt, "The user message")->type_name("TEXT")->group(in);
    f->prompt_file = app.add_option("-f,--file", o->prompt_file, "Read the user message from FILE")
                         ->type_name("FILE")
                         ->group(in);
    f->system = app.add_option("-s,--system", o->system, "Optional system message")
                    ->type_name("TEXT")
                    ->group(in);
    f->messages = app.add_option("--messages", o->messages_file,
                                 "Whole chat as JSON messages (replaces -i/-p/-s)")
                      ->type_name("FILE")
                      ->group(in);
    app.add_flag("--raw", o->raw, "Raw text prompt: no chat template, no images")->group(in);
    f->batch = app.add_option("--batch", o->batch_file,
                              "One request per JSON line: {\"id\", \"messages\", ...}")
                   ->type_name("FILE")
                   ->group(in);
    f->parallel = app.add_option("--parallel", t->parallel,
                                 "--batch: conversations decoded at once (default 1)")
                      ->type_name("N")
                      ->group(in);
    f->admission_budget =
        app.add_option("--admission-budget-ms", t->admission_budget,
                       "--batch: admit a conversation in pieces of about MS between the tokens "
                       "of the running ones (default 500; 0: whole images, 512-token chunks)")
            ->type_name("MS")
            ->group(in);
    f->interactive =
        app.add_flag("--interactive", o->interactive,
                     "Chat on stdin: one turn per line; /image PATH, /video PATH, /clear, /exit")
            ->group(in);
}

// Sampling, limits, constraints and how the model is loaded.
void add_generation_flags(CLI::App& app, RunOptions* o, NumberTexts* t) {
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
    app.add_option("--json-schema", o->json_schema_file,
                   "Constrain the answer to JSON valid against this JSON schema")
        ->type_name("FILE")
        ->group(gen);
    app.add_option("--grammar", o->grammar_file,
                   "Constrain the answer to this GBNF grammar (llama.cpp's format)")
        ->type_name("FILE")
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
           "Text decoder weights: bf16 (as stored, default), q8 (int8) or q4 (4-bit groups), "
           "quantized at load")
        ->type_name("bf16|q8|q4")
        ->group(gen);
    app.add_option("--vision-weights", t->vision_weights,
                   "Vision tower weights: bf16 (as stored, default) or q8 (int8 per output "
                   "channel, activations per row, quantized at load)")
        ->type_name("bf16|q8")
        ->group(gen);
    app.add_option("--image-min-tokens", t->image_min_tokens, "Minimum visual tokens per image")
        ->type_name("N")
        ->group(gen);
    app.add_option("--image-max-tokens", t->image_max_tokens, "Maximum visual tokens per image")
        ->type_name("N")
        ->group(gen);
}

// What is written where, and how much is said on stderr.
void add_output_flags(CLI::App& app, RunOptions* o, int* verbose_count, int* quiet_count,
                      Flags* f) {
    const std::string out = "Output";
    app.add_flag("--json", o->json, "Print one JSON object at the end instead of streaming")
        ->group(out);
    app.add_flag("--tokenize", o->tokenize, "Only tokenize the prompt, print the ids and exit")
        ->group(out);
    app.add_option("--dump-pixels", o->dump_pixels,
                   "Write the first image's pixel_values or video's pixel_values_videos "
                   "(float32 .npy)")
        ->type_name("FILE")
        ->group(out);
    app.add_option("--dump-vision", o->dump_vision,
                   "Write the first image's vision-tower output, or a video's for all its "
                   "frame pairs in order (float32 .npy, [tokens, hidden])")
        ->type_name("FILE")
        ->group(out);
    app.add_option("--dump-logits", o->dump_logits,
                   "Write the logits at the last prompt position (float32 .npy)")
        ->type_name("FILE")
        ->group(out);
    f->output = app.add_option("-o,--output", o->output_file,
                               "--batch: write result lines to FILE (default stdout)")
                    ->type_name("FILE")
                    ->group(out);
    app.add_option("--draw-boxes", o->draw_boxes,
                   "Draw the answer's grounding boxes on the first image (PNG)")
        ->type_name("OUT.png")
        ->group(out);
    app.add_flag("--dry-run", o->dry_run,
                 "Report images, videos, tokens, memory and time estimates; run nothing")
        ->group(out);
    f->verbose =
        app.add_flag("-v,--verbose", *verbose_count, "More progress on stderr")->group(out);
    f->quiet = app.add_flag("-q,--quiet", *quiet_count, "Errors only on stderr")->group(out);
    app.add_flag("--version", o->version, "Print the version and the ISA in use, then exit")
        ->group(out);
    // Created last so that the help lists Input, Generation, Output in that order.
    app.set_help_flag("-h,--help", "Print this help and exit")->group(out);
}

}  // namespace

Flags build_app(CLI::App& app, RunOptions* o, NumberTexts* t, int* verbose_count,
                int* quiet_count) {
    Flags f;
    auto formatter = std::make_shared<QvlFormatter>();
    formatter->column_width(32);
    app.formatter(formatter);
    app.footer(kFooter);
    app.allow_extras(true);  // unknown flags are reported by parse_args in one line

    add_input_flags(app, o, t, &f);
    add_generation_flags(app, o, t);
    add_output_flags(app, o, verbose_count, quiet_count, &f);
    return f;
}

}  // namespace qvl::app
