#include "run_support.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/exit_codes.h"
#include "io/image.h"

namespace qvl::app {

using base::ErrorCode;

int fail(int code, const std::string& message, const char* hint) {
    std::fprintf(stderr, "qvl-run: error: %s\n", message.c_str());
    if (hint != nullptr) std::fprintf(stderr, "hint: %s\n", hint);
    return code;
}

int fail(int code, const base::Status& st, const char* hint) {
    return fail(code, st.message(), hint);
}

int input_exit(const base::Status& st) {
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

base::Result<std::vector<std::uint8_t>> read_stdin_image() {
    const std::uint64_t limit = io::ImageLimits{}.max_file_bytes;
    std::vector<std::uint8_t> bytes;
    std::uint8_t buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            return base::error(ErrorCode::kIo, "stdin: cannot read the image: {}",
                               std::strerror(errno));
        }
        if (bytes.size() + std::size_t(n) > limit) {
            return base::error(ErrorCode::kOutOfRange, "stdin: the image is over {} bytes", limit);
        }
        bytes.insert(bytes.end(), buf, buf + n);
    }
    if (bytes.empty()) return base::error(ErrorCode::kCorruptFile, "stdin: no image data (-i -)");
    return bytes;
}

text::ChatMessage user_turn(const RunOptions& o, const std::string& text,
                            const std::vector<std::uint8_t>& stdin_image) {
    text::ChatMessage user{.role = "user"};
    for (const std::string& path : o.images) {
        text::ChatPart part{.kind = text::ChatPart::Kind::kImage, .image_path = path};
        if (path == "-") {
            part.image_path = "stdin";
            part.image_bytes = stdin_image;
        }
        user.parts.push_back(std::move(part));
    }
    user.parts.push_back({.kind = text::ChatPart::Kind::kText, .text = text});
    return user;
}

base::Result<std::vector<text::ChatMessage>> build_messages(
    const RunOptions& o, const std::string& text, const std::vector<std::uint8_t>& stdin_image) {
    if (!o.messages_file.empty()) return text::load_messages_file(o.messages_file);
    std::vector<text::ChatMessage> messages;
    if (!o.system.empty()) {
        messages.push_back(
            {.role = "system", .parts = {{.kind = text::ChatPart::Kind::kText, .text = o.system}}});
    }
    messages.push_back(user_turn(o, text, stdin_image));
    return messages;
}

runtime::SamplingParams sampling_from(const RunOptions& o, const model::GenerationConfig& gen) {
    runtime::SamplingParams s;
    if (gen.do_sample) {
        s.temperature = gen.temperature;
        s.top_k = gen.top_k;
        s.top_p = gen.top_p;
    }
    // A logits processor, not a sampling warper: Hugging Face applies it to greedy runs too.
    s.repetition_penalty = gen.repetition_penalty;
    if (o.temperature) s.temperature = *o.temperature;
    if (o.top_k) s.top_k = *o.top_k;
    if (o.top_p) s.top_p = *o.top_p;
    if (o.repeat_penalty) s.repetition_penalty = *o.repeat_penalty;
    if (o.presence_penalty) s.presence_penalty = *o.presence_penalty;
    s.seed = o.seed ? *o.seed : std::random_device{}();
    return s;
}

}  // namespace qvl::app
