#include "chat_mode.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "engine_turn.h"
#include "io/image.h"
#include "run_support.h"
#include "runtime/kv_cache.h"

namespace qvl::app {
namespace {

std::string trim(std::string s) {
    const auto not_space = [](unsigned char c) { return c != ' ' && c != '\t' && c != '\r'; };
    while (!s.empty() && !not_space(s.back())) s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && !not_space(s[i])) ++i;
    return s.substr(i);
}

void note(const RunOptions& o, const std::string& text) {
    if (o.verbosity >= 0) std::fprintf(stderr, "qvl-run: %s\n", text.c_str());
}

}  // namespace

int run_chat(const RunOptions& o, const model::Model& model, runtime::Engine& engine,
             const image::PreprocessConfig& preprocess, const runtime::GenerateParams& params,
             std::atomic<bool>* interrupted) {
    const bool terminal = ::isatty(STDIN_FILENO) != 0;
    std::vector<text::ChatMessage> start;
    if (!o.system.empty()) {
        start.push_back(
            {.role = "system", .parts = {{.kind = text::ChatPart::Kind::kText, .text = o.system}}});
    }
    std::vector<text::ChatMessage> conversation = start;
    std::vector<std::string> pending_images = o.images;
    bool first_from_flag = o.prompt_given;
    int turn = 0;
    for (;;) {
        std::string line;
        if (first_from_flag) {
            line = o.prompt;
            first_from_flag = false;
        } else {
            if (terminal) std::fputs("> ", stderr);
            if (!std::getline(std::cin, line)) break;  // end of input
        }
        line = trim(line);
        if (line.empty()) continue;
        if (line == "/exit") break;
        if (line == "/clear") {
            conversation = start;
            pending_images.clear();
            engine.forget_prefixes();
            note(o, "new conversation");
            continue;
        }
        if (line.rfind("/image", 0) == 0 && (line.size() == 6 || line[6] == ' ')) {
            std::string path = trim(line.substr(6));
            if (path.rfind("file://", 0) == 0) path.erase(0, 7);
            if (path.empty()) {
                note(o, "/image needs a path: /image photo.jpg");
            } else if (::access(path.c_str(), R_OK) != 0) {
                note(o, "error: " + path + ": cannot read the image; nothing attached");
            } else {
                pending_images.push_back(path);
                note(o, "image attached to the next turn: " + path);
            }
            continue;
        }
        if (line[0] == '/' && line.find(' ') == std::string::npos && line.size() < 16) {
            note(o, "unknown command " + line + " (commands: /image PATH, /clear, /exit)");
            continue;
        }

        text::ChatMessage user{.role = "user"};
        for (const std::string& path : pending_images) {
            user.parts.push_back({.kind = text::ChatPart::Kind::kImage, .image_path = path});
        }
        user.parts.push_back({.kind = text::ChatPart::Kind::kText, .text = line});
        conversation.push_back(std::move(user));
        base::Result<runtime::PreparedPrompt> prompt =
            runtime::prepare_chat_prompt(model, conversation, preprocess, io::ImageLimits{});
        if (!prompt.ok()) {
            conversation.pop_back();  // the turn is dropped; its images stay pending
            note(o, "error: " + prompt.status().message());
            continue;
        }
        pending_images.clear();
        const int prompt_tokens = int(prompt.value().ids.size());
        base::Status fits = runtime::check_context_fits(
            0, std::int64_t(prompt_tokens) + params.n_predict, engine.ctx_size(),
            fmt::format("the prompt of {} tokens plus {} new", prompt_tokens, params.n_predict));
        // The engine reuses the slot's KV for the prefix this prompt shares with the previous
        // turn (its prompt and answer): the answer is the one a fresh run of the whole
        // conversation gives, at the cost of the new tokens only.
        runtime::Request request;
        request.prompt = std::move(prompt).value();
        request.params = params;
        request.on_text = [](std::string_view piece, std::int32_t) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
        };
        interrupted->store(false);  // a Ctrl-C while waiting for the line stops nothing
        base::Result<runtime::RequestResult> result =
            fits.ok() ? run_turn(engine, std::move(request), interrupted)
                      : base::Result<runtime::RequestResult>(std::move(fits));
        if (!result.ok()) {
            conversation.pop_back();
            std::fputs("\n", stdout);
            note(o, "error: " + result.status().message() +
                        (result.status().code() == base::ErrorCode::kOutOfRange
                             ? " (/clear starts a new conversation; -c raises the context)"
                             : ""));
            continue;
        }
        const runtime::RequestResult& r = result.value();
        ++turn;
        if (o.verbosity > 0) {
            note(o, fmt::format("turn {}: {} prompt tokens, {} reused from the cache, {} "
                                "prefilled; first token after {:.1f} ms",
                                turn, prompt_tokens, r.cached_prompt_tokens,
                                prompt_tokens - r.cached_prompt_tokens, r.timings.ttft));
        }
        if (r.finish_reason == "cancelled") {
            interrupted->store(false);
            note(o, "answer stopped");
        }
        std::fputs("\n\n", stdout);
        std::fflush(stdout);
        conversation.push_back({.role = "assistant",
                                .parts = {{.kind = text::ChatPart::Kind::kText, .text = r.text}}});
    }
    return kExitOk;
}

}  // namespace qvl::app
