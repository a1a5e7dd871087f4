#include "chat_mode.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "exit_codes.h"
#include "io/image.h"
#include "run_support.h"

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

int run_chat(const RunOptions& o, const model::Model& model, runtime::Session& session,
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
        // The whole conversation is prefilled again: the answer then equals --messages' exactly.
        session.reset();
        runtime::GenerateHooks hooks;
        hooks.on_text = [](std::string_view piece) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
        };
        base::Result<runtime::GenerateResult> result =
            runtime::generate(session, prompt.value(), params, hooks);
        if (!result.ok()) {
            conversation.pop_back();
            std::fputs("\n", stdout);
            note(o, "error: " + result.status().message() +
                        (result.status().code() == base::ErrorCode::kOutOfRange
                             ? " (/clear starts a new conversation; -c raises the context)"
                             : ""));
            continue;
        }
        if (result.value().finish_reason == "interrupted") {
            interrupted->store(false);
            note(o, "answer stopped");
        }
        std::fputs("\n\n", stdout);
        std::fflush(stdout);
        conversation.push_back(
            {.role = "assistant",
             .parts = {{.kind = text::ChatPart::Kind::kText, .text = result.value().text}}});
    }
    return kExitOk;
}

}  // namespace qvl::app
