#include "run_support.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/exit_codes.h"
#include "common/status.h"

namespace qvl::app {

int fail(int code, const std::string& message, const char* hint) {
    std::fprintf(stderr, "qvl-run: error: %s\n", message.c_str());
    if (hint != nullptr) std::fprintf(stderr, "hint: %s\n", hint);
    return code;
}

int fail(int code, const Status& st, const char* hint) { return fail(code, st.message(), hint); }

Status check_fits(std::int64_t n_new, std::int64_t capacity, const std::string& what) {
    if (n_new >= 0 && n_new <= capacity) return {};
    return error(ErrorCode::kOutOfRange, "{} ({} tokens) does not fit the context of {} tokens",
                 what, n_new, capacity);
}

int input_exit(const Status& st) {
    return st.code() == ErrorCode::kResourceExhausted ? kExitResource : kExitInput;
}

double peak_rss_mb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_maxrss) / 1024.0;
}

double current_rss_mb() {
    long pages_total = 0, pages_resident = 0;
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0.0;
    const int n = std::fscanf(f, "%ld %ld", &pages_total, &pages_resident);
    std::fclose(f);
    if (n != 2) return 0.0;
    return double(pages_resident) * double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

Result<std::vector<std::uint8_t>> read_stdin_image() {
    const std::uint64_t limit = ImageLimits{}.max_file_bytes;
    std::vector<std::uint8_t> bytes;
    std::uint8_t buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            return error(ErrorCode::kIo, "stdin: cannot read it: {}", std::strerror(errno));
        }
        if (bytes.size() + std::size_t(n) > limit) {
            return error(ErrorCode::kOutOfRange, "stdin: over {} bytes", limit);
        }
        bytes.insert(bytes.end(), buf, buf + n);
    }
    if (bytes.empty()) return error(ErrorCode::kCorruptFile, "stdin: no data (-i - or --video -)");
    return bytes;
}

Message user_turn(const RunOptions& o, const std::string& text,
                  const std::vector<std::uint8_t>& stdin_image) {
    Message user{.role = "user"};
    for (const auto& [video, path] : o.media) {
        if (video) {
            user.content.push_back(path == "-" ? ContentPart::video_bytes(stdin_image, "stdin")
                                               : ContentPart::video_file(path));
        } else {
            user.content.push_back(path == "-" ? ContentPart::image_bytes(stdin_image, "stdin")
                                               : ContentPart::image_file(path));
        }
    }
    user.content.push_back(ContentPart::from_text(text));
    apply_video_sampling(o, &user);
    return user;
}

void apply_video_sampling(const RunOptions& o, Message* message) {
    for (ContentPart& part : message->content) {
        if (!part.is_video()) continue;
        part.video_fps = o.video_fps;
        part.video_max_frames = o.video_max_frames;
    }
}

Result<std::vector<Message>> build_messages(const RunOptions& o, const std::string& text,
                                            const std::vector<std::uint8_t>& stdin_image) {
    if (!o.messages_file.empty()) {
        Result<std::vector<Message>> messages = load_messages_file(o.messages_file);
        if (messages.ok()) {
            for (Message& m : messages.value()) apply_video_sampling(o, &m);
        }
        return messages;
    }
    std::vector<Message> messages;
    if (!o.system.empty()) {
        messages.push_back({.role = "system", .content = {ContentPart::from_text(o.system)}});
    }
    messages.push_back(user_turn(o, text, stdin_image));
    return messages;
}

Sampling sampling_from(const RunOptions& o, const Model& model) {
    Sampling s = model.sampling({.temperature = o.temperature,
                                 .top_p = o.top_p,
                                 .top_k = o.top_k,
                                 .seed = o.seed,
                                 .repetition_penalty = o.repeat_penalty,
                                 .presence_penalty = o.presence_penalty});
    s.logit_bias = o.logit_bias;
    s.logprobs = o.logprobs;
    return s;
}

int load_output_grammar(RunOptions* o) {
    if (o->json_schema_file.empty() && o->grammar_file.empty()) return -1;
    if (!o->json_schema_file.empty() && !o->grammar_file.empty()) {
        return fail(kExitUsage, "--json-schema and --grammar are exclusive: give one");
    }
    const std::string& path = o->json_schema_file.empty() ? o->grammar_file : o->json_schema_file;
    Result<std::string> text = read_text_file(path, 64u << 20);
    if (!text.ok()) return fail(kExitInput, text.status());
    Result<OutputConstraint> c = o->json_schema_file.empty()
                                     ? OutputConstraint::gbnf(text.value())
                                     : OutputConstraint::json_schema(text.value());
    if (!c.ok()) return fail(kExitInput, path + ": " + c.status().message());
    o->constraint = std::move(c).value();
    return -1;
}

ModelOptions model_options(const RunOptions& o, bool logits_screen, bool for_generation) {
    return {.weights = o.weights_q4   ? Weights::kQ4
                       : o.weights_q8 ? Weights::kQ8
                                      : Weights::kBF16,
            .vision_weights = o.vision_q8 ? VisionWeights::kQ8 : VisionWeights::kBF16,
            .logits_screen = logits_screen,
            .for_generation = for_generation};
}

}  // namespace qvl::app
