#include "chat_mode.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "common/exit_codes.h"
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

// What the chat carries from turn to turn.
struct ChatState {
    std::vector<Message> start;         // the -s system message, kept by /clear
    std::vector<Message> conversation;  // start plus every answered turn
    // Images and videos attached to the next user turn, in order ({is_video, path}).
    std::vector<std::pair<bool, std::string>> pending;
    int turn = 0;
};

// "/image PATH" or "/video PATH": a readable file is attached to the next turn. Decoding (and its
// errors) happens when the turn is prepared, as for -i and --video.
void attach(const RunOptions& o, const std::string& line, bool video, ChatState* chat) {
    const char* what = video ? "video" : "image";
    std::string path = trim(line.substr(6));
    if (path.rfind("file://", 0) == 0) path.erase(0, 7);
    if (path.empty()) {
        note(o, fmt::format("/{0} needs a path: /{0} {1}", what, video ? "clip.mp4" : "photo.jpg"));
    } else if (::access(path.c_str(), R_OK) != 0) {
        note(o, fmt::format("error: {}: cannot read the {}; nothing attached", path, what));
    } else {
        chat->pending.emplace_back(video, path);
        note(o, fmt::format("{} attached to the next turn: {}", what, path));
    }
}

// Runs a command line (/clear, /image PATH, /video PATH, an unknown /word); false when `line` is
// a user turn.
bool run_command(const RunOptions& o, const std::string& line, Engine& engine, ChatState* chat) {
    if (line == "/clear") {
        chat->conversation = chat->start;
        chat->pending.clear();
        engine.forget_prefixes();
        note(o, "new conversation");
        return true;
    }
    for (const bool video : {false, true}) {
        const char* command = video ? "/video" : "/image";
        if (line.rfind(command, 0) == 0 && (line.size() == 6 || line[6] == ' ')) {
            attach(o, line, video, chat);
            return true;
        }
    }
    if (line[0] == '/' && line.find(' ') == std::string::npos && line.size() < 16) {
        note(o, "unknown command " + line + " (commands: /image PATH, /video PATH, /clear, /exit)");
        return true;
    }
    return false;
}

// The user turn `line` with the pending images and videos (sampled with --video-fps /
// --video-max-frames), rendered with the whole conversation; the turn stays in the conversation
// only when it renders (a failed turn keeps its attachments pending).
Result<Prompt> add_user_turn(const RunOptions& o, const std::string& line, Engine& engine,
                             ChatState* chat) {
    Message user{.role = "user"};
    for (const auto& [video, path] : chat->pending) {
        user.content.push_back(video ? ContentPart::video_file(path)
                                     : ContentPart::image_file(path));
    }
    user.content.push_back(ContentPart::from_text(line));
    apply_video_sampling(o, &user);
    chat->conversation.push_back(std::move(user));
    Result<Prompt> prompt = engine.prepare(chat->conversation);
    if (!prompt.ok()) {
        chat->conversation.pop_back();
        return prompt;
    }
    chat->pending.clear();
    return prompt;
}

// Answers one user turn, streaming it to stdout; a failed turn is reported and dropped.
void answer_turn(const RunOptions& o, const std::string& line, Engine& engine,
                 const Sampling& sampling, std::atomic<bool>* interrupted, ChatState* chat) {
    Result<Prompt> prompt = add_user_turn(o, line, engine, chat);
    if (!prompt.ok()) {
        note(o, "error: " + prompt.status().message());
        return;
    }
    const int prompt_tokens = int(prompt.value().token_ids().size());
    Status fits =
        check_fits(std::int64_t(prompt_tokens) + o.n_predict, engine.context_size(),
                   fmt::format("the prompt of {} tokens plus {} new", prompt_tokens, o.n_predict));
    // The engine reuses the slot's KV for the prefix this prompt shares with the previous
    // turn (its prompt and answer): the answer is the one a fresh run of the whole
    // conversation gives, at the cost of the new tokens only.
    Request request{.prompt = std::move(prompt).value(),
                    .max_tokens = o.n_predict,
                    .ignore_eos = o.ignore_eos,
                    .sampling = sampling};
    request.on_piece = [](const Piece& piece) {
        std::fwrite(piece.text.data(), 1, piece.text.size(), stdout);
        std::fflush(stdout);
    };
    interrupted->store(false);  // a Ctrl-C while waiting for the line stops nothing
    Result<Generation> result = fits.ok() ? engine.generate(std::move(request), interrupted)
                                          : Result<Generation>(std::move(fits));
    if (!result.ok()) {
        chat->conversation.pop_back();
        std::fputs("\n", stdout);
        note(o, "error: " + result.status().message() +
                    (result.status().code() == ErrorCode::kOutOfRange
                         ? " (/clear starts a new conversation; -c raises the context)"
                         : ""));
        return;
    }
    const Generation& r = result.value();
    ++chat->turn;
    if (o.verbosity > 0) {
        note(o, fmt::format("turn {}: {} prompt tokens, {} reused from the cache, {} "
                            "prefilled; first token after {:.1f} ms",
                            chat->turn, prompt_tokens, r.timings.cached_prompt_tokens,
                            prompt_tokens - r.timings.cached_prompt_tokens, r.timings.ttft_ms));
    }
    if (r.finish_reason == "cancelled") {
        interrupted->store(false);
        note(o, "answer stopped");
    }
    std::fputs("\n\n", stdout);
    std::fflush(stdout);
    chat->conversation.push_back(
        {.role = "assistant", .content = {ContentPart::from_text(r.text)}});
}

}  // namespace

int run_chat(const RunOptions& o, Engine& engine, const Sampling& sampling,
             std::atomic<bool>* interrupted) {
    const bool terminal = ::isatty(STDIN_FILENO) != 0;
    ChatState chat;
    if (!o.system.empty()) {
        chat.start.push_back({.role = "system", .content = {ContentPart::from_text(o.system)}});
    }
    chat.conversation = chat.start;
    chat.pending = o.media;
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
        if (run_command(o, line, engine, &chat)) continue;
        answer_turn(o, line, engine, sampling, interrupted, &chat);
    }
    return kExitOk;
}

}  // namespace qvl::app
