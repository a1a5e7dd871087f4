// qvl-run's rules between flags, checked after the numbers are converted: which prompt source,
// what --batch, --interactive and --raw exclude, and what each output flag needs.
#include <fmt/format.h>

#include <string_view>
#include <utility>
#include <vector>

#include "args_parse.h"

namespace qvl::app {
namespace {

std::optional<UsageError> check_image_token_range(const RunOptions* o) {
    if (o->image_min_tokens && o->image_max_tokens && *o->image_min_tokens > *o->image_max_tokens) {
        return UsageError{fmt::format("--image-min-tokens {} is above --image-max-tokens {}",
                                      *o->image_min_tokens, *o->image_max_tokens),
                          {}};
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
                       f.system->count() > 0 || !o->media.empty() || o->raw || o->json ||
                       o->tokenize || !o->dump_pixels.empty() || !o->dump_vision.empty() ||
                       !o->dump_logits.empty();
    if (other) {
        return UsageError{
            "--batch takes each conversation from its lines: no -p, -f, -i, --video, -s, "
            "--messages, --raw, --json, --tokenize or --dump-*",
            "put each conversation's \"messages\" in the batch file"};
    }
    return check_image_token_range(o);
}

// Exactly one of -p, -f and --messages, or chat mode; what --messages and --raw exclude.
std::optional<UsageError> check_prompt_source(const Flags& f, RunOptions* o,
                                              bool stdin_is_terminal) {
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
        if (!o->media.empty() || f.system->count() > 0) {
            return UsageError{
                "--messages holds the whole conversation: -i and -s cannot be added, nor --video",
                "put images, videos and the system message inside the messages file"};
        }
    }
    if (o->raw) {
        if (!o->media.empty() || f.messages->count() > 0 || f.system->count() > 0) {
            return UsageError{"--raw takes plain text only: no -i, --video, -s or --messages",
                              "write the chat template yourself or drop --raw"};
        }
    }
    return std::nullopt;
}

// Turns "file://PATH" into PATH and counts the images and videos read from stdin ("-"): at
// most one.
std::optional<UsageError> check_images(RunOptions* o, int* from_stdin) {
    *from_stdin = 0;
    for (auto& [video, path] : o->media) {
        if (path.rfind("file://", 0) == 0) path.erase(0, 7);  // a local file URL is its path
        if (path.empty())
            return UsageError{video ? "--video: empty path" : "-i/--image: empty path", {}};
        *from_stdin += path == "-";
    }
    if (*from_stdin > 1) {
        return UsageError{"stdin holds one image or video: give '-' once (-i - or --video -)", {}};
    }
    return std::nullopt;
}

// Chat mode reads its turns from stdin and streams its answers.
std::optional<UsageError> check_interactive(const Flags& f, const RunOptions* o, int from_stdin) {
    if (f.messages->count() > 0 || f.prompt_file->count() > 0 || o->raw) {
        return UsageError{"--interactive reads the turns from stdin: no -f, --messages or --raw",
                          {}};
    }
    if (from_stdin > 0) {
        return UsageError{"-i - or --video - reads stdin, which --interactive needs for the turns",
                          "save the image or video to a file and give its path"};
    }
    if (o->json || o->tokenize || o->dry_run || !o->draw_boxes.empty() || !o->dump_pixels.empty() ||
        !o->dump_vision.empty() || !o->dump_logits.empty()) {
        return UsageError{
            "--interactive streams its answers: no --json, --tokenize, "
            "--dry-run, --draw-boxes or --dump-*",
            {}};
    }
    return std::nullopt;
}

// --draw-boxes and --dump-* need what they write about.
std::optional<UsageError> check_outputs(const Flags& f, const RunOptions* o) {
    if (!o->draw_boxes.empty() && o->images.empty() && f.messages->count() == 0) {
        return UsageError{"--draw-boxes needs an image (-i)", {}};
    }
    if (auto e = check_image_token_range(o)) return e;
    const bool may_have_images = !o->media.empty() || f.messages->count() > 0;
    const std::pair<const char*, const std::string*> dumps[] = {{"--dump-pixels", &o->dump_pixels},
                                                                {"--dump-vision", &o->dump_vision},
                                                                {"--dump-logits", &o->dump_logits}};
    for (const auto& [flag, path] : dumps) {
        if (path->empty()) continue;
        if (std::string_view(flag) != "--dump-logits" && !may_have_images) {
            return UsageError{fmt::format("{} needs an image (-i) or a video (--video)", flag), {}};
        }
        if (o->tokenize && std::string_view(flag) != "--dump-pixels") {
            return UsageError{fmt::format("--tokenize stops before {} could be written", flag), {}};
        }
    }
    return std::nullopt;
}

}  // namespace

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
    if (auto e = check_prompt_source(f, o, stdin_is_terminal)) return e;
    int from_stdin = 0;
    if (auto e = check_images(o, &from_stdin)) return e;
    if (o->interactive) {
        if (auto e = check_interactive(f, o, from_stdin)) return e;
    }
    return check_outputs(f, o);
}

}  // namespace qvl::app
