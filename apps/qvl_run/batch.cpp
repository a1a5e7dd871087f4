#include "batch.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/exit_codes.h"
#include "common/status.h"
#include "common/stopwatch.h"
#include "json_out.h"
#include "run_support.h"

namespace qvl::app {
namespace {

constexpr int kMaxTokens = 1 << 20;

// Written from the engine's callbacks and the reading thread: result lines, counts, progress.
class Output {
  public:
    Output(std::FILE* out, int total, bool quiet) : out_(out), total_(total), quiet_(quiet) {}

    // One finished line (a result or an error).
    void write(const std::string& json, int tokens, bool error) {
        {
            const std::lock_guard<std::mutex> lock(mu_);
            std::fputs(json.c_str(), out_);
            std::fputc('\n', out_);
            std::fflush(out_);
            ++done_;
            errors_ += error ? 1 : 0;
            tokens_ += tokens;
            if (!quiet_) {
                const double s = clock_.elapsed_ms() / 1000.0;
                const double eta = done_ > 0 ? s / done_ * (total_ - done_) : 0.0;
                // One line, rewritten in place: a terminal shows the state, not a scroll.
                std::fprintf(
                    stderr, "\r\033[Kqvl-run: batch %d/%d done, %.1f tokens/s, ETA %.0f s%s", done_,
                    total_, s > 0 ? double(tokens_) / s : 0.0, eta, done_ == total_ ? "\n" : "");
            }
        }
        cv_.notify_all();
    }
    void start() {
        const std::lock_guard<std::mutex> lock(mu_);
        ++in_flight_;
    }
    void end() {
        {
            const std::lock_guard<std::mutex> lock(mu_);
            --in_flight_;
        }
        cv_.notify_all();
    }
    void wait_below(int in_flight) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return in_flight_ < in_flight; });
    }
    void wait_done() {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return done_ >= total_; });
    }
    int errors() const {
        const std::lock_guard<std::mutex> lock(mu_);
        return errors_;
    }
    long long tokens() const {
        const std::lock_guard<std::mutex> lock(mu_);
        return tokens_;
    }

  private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::FILE* out_;
    int total_;
    bool quiet_;
    int done_ = 0, errors_ = 0, in_flight_ = 0;
    long long tokens_ = 0;
    Stopwatch clock_;
};

// The request's id echoed as given: a string or a number; null when absent.
std::string id_json(const JsonValue* id) {
    if (id == nullptr) return "null";
    if (id->is_string()) return json_quote(id->as_string());
    if (id->is_integer()) return std::to_string(id->as_int());
    if (id->is_number()) return fmt::format("{}", id->as_double());
    return "null";
}

std::string error_line(const std::string& id, int line, std::string_view message) {
    return fmt::format("{{\"id\": {}, \"line\": {}, \"error\": {}}}", id, line,
                       json_quote(message));
}

std::string result_line(const std::string& id, const Generation& r) {
    const Timings& t = r.timings;
    return fmt::format(
        "{{\"id\": {}, \"text\": {}, \"tokens\": {}, \"finish_reason\": \"{}\", "
        "\"prompt_tokens\": {}, \"timings_ms\": {{\"queue\": {:.1f}, \"vision\": {:.1f}, "
        "\"prefill\": {:.1f}, \"ttft\": {:.1f}, \"decode\": {:.1f}, \"total\": {:.1f}}}}}",
        id, json_quote(r.text), json_int_array(r.tokens), r.finish_reason, t.prompt_tokens,
        t.queue_ms, t.vision_ms, t.prefill_ms, t.ttft_ms, t.decode_ms, t.total_ms);
}

Status bad(const std::string& label, std::string_view what) {
    return Status(ErrorCode::kInvalidArgument, fmt::format("{}: {}", label, what));
}

// Reads one line's request fields into *req (all but the callbacks).
Status parse_request(const JsonValue& v, const std::string& label,
                     const std::filesystem::path& image_dir, const RunOptions& o, const Model& m,
                     const Engine& engine, Request* req) {
    if (!v.is_object()) return bad(label, "expected a JSON object");
    const JsonValue* messages = nullptr;
    req->max_tokens = o.n_predict;
    req->ignore_eos = o.ignore_eos;
    req->sampling = sampling_from(o, m);
    req->constraint = o.constraint;
    Sampling& sampling = req->sampling;
    for (const JsonValue::Member& member : v.members()) {
        const std::string& key = member.first;
        const JsonValue& x = member.second;
        if (key == "id") continue;
        if (key == "messages") {
            messages = &x;
        } else if (key == "n_predict") {
            if (!x.is_integer() || x.as_int() < 0 || x.as_int() > kMaxTokens) {
                return bad(label,
                           fmt::format("n_predict must be an integer in [0, {}]", kMaxTokens));
            }
            req->max_tokens = int(x.as_int());
        } else if (key == "temperature") {
            if (!x.is_number() || x.as_double() < 0) {
                return bad(label, "temperature must be a number >= 0");
            }
            sampling.temperature = float(x.as_double());
        } else if (key == "top_k") {
            if (!x.is_integer() || x.as_int() < 0 || x.as_int() > (1LL << 30)) {
                return bad(label, "top_k must be an integer >= 0");
            }
            sampling.top_k = int(x.as_int());
        } else if (key == "top_p") {
            if (!x.is_number() || !(x.as_double() > 0 && x.as_double() <= 1)) {
                return bad(label, "top_p must be a number in (0, 1]");
            }
            sampling.top_p = float(x.as_double());
        } else if (key == "seed") {
            if (!x.is_integer() || x.as_int() < 0) {
                return bad(label, "seed must be an integer >= 0");
            }
            sampling.seed = std::uint64_t(x.as_int());
        } else if (key == "ignore_eos") {
            if (!x.is_bool()) return bad(label, "ignore_eos must be true or false");
            req->ignore_eos = x.as_bool();
        } else {
            return bad(label, fmt::format("unknown field \"{}\"", key));
        }
    }
    if (messages == nullptr) return bad(label, "no \"messages\"");
    Result<std::vector<Message>> chat = parse_messages(*messages, label, image_dir.string());
    if (!chat.ok()) return chat.status();
    for (Message& m : chat.value()) apply_video_sampling(o, &m);
    Result<Prompt> prompt = engine.prepare(chat.value());
    if (!prompt.ok()) {
        return Status(prompt.status().code(), label + ": " + prompt.status().message());
    }
    req->prompt = std::move(prompt).value();
    const std::size_t prompt_tokens = req->prompt.token_ids().size();
    if (std::int64_t(prompt_tokens) + req->max_tokens > o.ctx_size) {
        return Status(
            ErrorCode::kOutOfRange,
            fmt::format("{}: prompt of {} tokens plus n_predict {} does not fit the context of {} "
                        "tokens (raise -c/--ctx-size)",
                        label, prompt_tokens, req->max_tokens, o.ctx_size));
    }
    return {};
}

// The file's non-blank lines as (1-based number, text).
std::vector<std::pair<int, std::string_view>> request_lines(std::string_view all) {
    std::vector<std::pair<int, std::string_view>> lines;
    std::size_t pos = 0;
    for (int number = 1; pos < all.size(); ++number) {
        const std::size_t end = std::min(all.find('\n', pos), all.size());
        const std::string_view line = all.substr(pos, end - pos);
        if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
            lines.emplace_back(number, line);
        }
        pos = end + 1;
    }
    return lines;
}

// The engine with --parallel slots, or the exit code after the error was reported.
std::variant<std::unique_ptr<Engine>, int> create_engine(const RunOptions& o, const EnvOptions& env,
                                                         const Model& m) {
    EngineOptions eo;
    eo.slots = o.parallel;
    eo.max_queue = 2 * o.parallel;
    eo.admission_budget_ms = o.admission_budget_ms;
    // Every session setting, the QVL_* environment included (QVL_ISA, QVL_TRACE): the same
    // session a single run would get, with --parallel slots.
    eo.session = session_options(o, env);
    Result<Engine> created = Engine::create(m, eo);
    if (!created.ok()) {
        return fail(
            created.status().code() == ErrorCode::kResourceExhausted ? kExitResource : kExitOther,
            created.status().message(), "lower -c/--ctx-size, --parallel or --image-max-tokens");
    }
    return std::make_unique<Engine>(std::move(created).value());
}

// Parses one line and submits it; every way it can fail becomes that line's error result.
void submit_line(const RunOptions& o, const Model& m, Engine& engine, int number,
                 std::string_view text, Output& output) {
    const std::string label = fmt::format("{}:{}", o.batch_file, number);
    Result<JsonValue> json = parse_json(text, label);
    if (!json.ok()) {
        output.write(error_line("null", number, json.status().message()), 0, true);
        return;
    }
    const std::string id = id_json(json.value().find("id"));
    const std::filesystem::path image_dir = std::filesystem::path(o.batch_file).parent_path();
    Request req;
    const Status st = parse_request(json.value(), label, image_dir, o, m, engine, &req);
    if (!st.ok()) {
        output.write(error_line(id, number, st.message()), 0, true);
        return;
    }
    req.on_done = [&output, id, line = number](const Generation& r) {
        if (r.finish_reason == "error") {
            output.write(error_line(id, line, r.error.message()), 0, true);
        } else {
            output.write(result_line(id, r), int(r.tokens.size()), false);
        }
        output.end();
    };
    // Keep the engine fed without preparing the whole file's images up front.
    output.wait_below(2 * o.parallel);
    output.start();
    const Result<RequestId> submitted = engine.submit(std::move(req));
    if (!submitted.ok()) {
        output.end();
        output.write(error_line(id, number, submitted.status().message()), 0, true);
    }
}

}  // namespace

int run_batch(const RunOptions& o, const EnvOptions& env) {
    const Stopwatch total;
    Result<std::string> file = read_text_file(o.batch_file);
    if (!file.ok()) return fail(kExitInput, file.status().message());
    const std::vector<std::pair<int, std::string_view>> lines = request_lines(file.value());

    Result<Model> loaded = Model::load(o.model_dir, model_options(o, env.logits_screen, true));
    if (!loaded.ok()) return fail(kExitModel, loaded.status().message());
    const Model& m = loaded.value();
    auto created = create_engine(o, env, m);
    if (const int* exit_code = std::get_if<int>(&created)) return *exit_code;
    std::unique_ptr<Engine> engine = std::move(std::get<std::unique_ptr<Engine>>(created));

    std::FILE* out = stdout;
    if (!o.output_file.empty()) {
        out = std::fopen(o.output_file.c_str(), "w");
        if (out == nullptr) return fail(kExitOther, fmt::format("cannot write {}", o.output_file));
    }
    // Progress only for a person at a terminal (the summary line at the end is always written).
    Output output(out, int(lines.size()), o.verbosity < 0 || ::isatty(STDERR_FILENO) == 0);
    for (const auto& [number, text] : lines) submit_line(o, m, *engine, number, text, output);
    output.wait_done();
    engine.reset();
    if (out != stdout) std::fclose(out);
    const int errors = output.errors();
    if (o.verbosity >= 0) {
        std::fprintf(stderr,
                     "qvl-run: batch of %zu requests (%d failed) in %.1f s, %lld tokens, "
                     "--parallel %d\n",
                     lines.size(), errors, total.elapsed_ms() / 1000.0, output.tokens(),
                     o.parallel);
    }
    return errors > 0 ? kExitInput : kExitOk;
}

}  // namespace qvl::app
