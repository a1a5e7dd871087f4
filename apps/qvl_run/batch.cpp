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
#include <vector>

#include "base/timer.h"
#include "common/exit_codes.h"
#include "io/json.h"
#include "io/json_write.h"
#include "json_out.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "text/chat_template.h"

namespace qvl::app {
namespace {

using base::ErrorCode;

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
    base::Timer clock_;
};

// The request's id echoed as given: a string or a number; null when absent.
std::string id_json(const io::JsonValue* id) {
    if (id == nullptr) return "null";
    if (id->is_string()) return io::json_quote(id->as_string());
    if (id->is_integer()) return std::to_string(id->as_int());
    if (id->is_number()) return fmt::format("{}", id->as_double());
    return "null";
}

std::string error_line(const std::string& id, int line, std::string_view message) {
    return fmt::format("{{\"id\": {}, \"line\": {}, \"error\": {}}}", id, line,
                       io::json_quote(message));
}

std::string result_line(const std::string& id, const runtime::RequestResult& r) {
    const runtime::RequestTimings& t = r.timings;
    return fmt::format(
        "{{\"id\": {}, \"text\": {}, \"tokens\": {}, \"finish_reason\": \"{}\", "
        "\"prompt_tokens\": {}, \"timings_ms\": {{\"queue\": {:.1f}, \"vision\": {:.1f}, "
        "\"prefill\": {:.1f}, \"ttft\": {:.1f}, \"decode\": {:.1f}, \"total\": {:.1f}}}}}",
        id, io::json_quote(r.text), json_int_array(r.tokens), r.finish_reason, r.prompt_tokens,
        t.queue, t.vision, t.prefill, t.ttft, t.decode, t.total);
}

base::Status bad(const std::string& label, std::string_view what) {
    return base::Status(ErrorCode::kInvalidArgument, fmt::format("{}: {}", label, what));
}

// Reads one line's request fields into *req (all but the callbacks).
base::Status parse_request(const io::JsonValue& v, const std::string& label,
                           const std::filesystem::path& image_dir, const RunOptions& o,
                           const model::Model& m, SamplingDefaults sampling_defaults,
                           runtime::Request* req) {
    if (!v.is_object()) return bad(label, "expected a JSON object");
    const io::JsonValue* messages = nullptr;
    runtime::GenerateParams& gp = req->params;
    gp.n_predict = o.n_predict;
    gp.ignore_eos = o.ignore_eos;
    gp.sampling = sampling_defaults(o, m.generation());
    gp.stop_ids = runtime::default_stop_ids(m);
    for (const io::JsonValue::Member& member : v.members()) {
        const std::string& key = member.first;
        const io::JsonValue& x = member.second;
        if (key == "id") continue;
        if (key == "messages") {
            messages = &x;
        } else if (key == "n_predict") {
            if (!x.is_integer() || x.as_int() < 0 || x.as_int() > kMaxTokens) {
                return bad(label,
                           fmt::format("n_predict must be an integer in [0, {}]", kMaxTokens));
            }
            gp.n_predict = int(x.as_int());
        } else if (key == "temperature") {
            if (!x.is_number() || x.as_double() < 0) {
                return bad(label, "temperature must be a number >= 0");
            }
            gp.sampling.temperature = float(x.as_double());
        } else if (key == "top_k") {
            if (!x.is_integer() || x.as_int() < 0 || x.as_int() > (1LL << 30)) {
                return bad(label, "top_k must be an integer >= 0");
            }
            gp.sampling.top_k = int(x.as_int());
        } else if (key == "top_p") {
            if (!x.is_number() || !(x.as_double() > 0 && x.as_double() <= 1)) {
                return bad(label, "top_p must be a number in (0, 1]");
            }
            gp.sampling.top_p = float(x.as_double());
        } else if (key == "seed") {
            if (!x.is_integer() || x.as_int() < 0) {
                return bad(label, "seed must be an integer >= 0");
            }
            gp.sampling.seed = std::uint64_t(x.as_int());
        } else if (key == "ignore_eos") {
            if (!x.is_bool()) return bad(label, "ignore_eos must be true or false");
            gp.ignore_eos = x.as_bool();
        } else {
            return bad(label, fmt::format("unknown field \"{}\"", key));
        }
    }
    if (messages == nullptr) return bad(label, "no \"messages\"");
    QVL_ASSIGN_OR_RETURN(std::vector<text::ChatMessage> chat,
                         text::parse_messages(*messages, label, image_dir));
    runtime::SessionOptions budget;
    budget.min_image_tokens = o.image_min_tokens.value_or(0);
    budget.max_image_tokens = o.image_max_tokens.value_or(0);
    const image::PreprocessConfig pp = runtime::effective_preprocess(m, budget);
    base::Result<runtime::PreparedPrompt> prompt =
        runtime::prepare_chat_prompt(m, chat, pp, io::ImageLimits{});
    if (!prompt.ok()) return prompt.status().with_context(label + ": ");
    req->prompt = std::move(prompt).value();
    if (std::int64_t(req->prompt.ids.size()) + gp.n_predict > o.ctx_size) {
        return base::Status(
            ErrorCode::kOutOfRange,
            fmt::format("{}: prompt of {} tokens plus n_predict {} does not fit the context of {} "
                        "tokens (raise -c/--ctx-size)",
                        label, req->prompt.ids.size(), gp.n_predict, o.ctx_size));
    }
    return base::Status();
}

int fail(int code, std::string_view message, const char* hint = nullptr) {
    std::fprintf(stderr, "qvl-run: error: %.*s\n", int(message.size()), message.data());
    if (hint != nullptr) std::fprintf(stderr, "hint: %s\n", hint);
    return code;
}

}  // namespace

int run_batch(const RunOptions& o, const EnvOptions& env, SamplingDefaults sampling_defaults) {
    const base::Timer total;
    base::Result<std::string> file = io::read_text_file(o.batch_file);
    if (!file.ok()) return fail(kExitInput, file.status().message());
    std::vector<std::pair<int, std::string_view>> lines;  // (1-based number, text)
    {
        const std::string_view all = file.value();
        std::size_t pos = 0;
        for (int number = 1; pos < all.size(); ++number) {
            const std::size_t end = std::min(all.find('\n', pos), all.size());
            const std::string_view line = all.substr(pos, end - pos);
            if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
                lines.emplace_back(number, line);
            }
            pos = end + 1;
        }
    }

    base::Result<std::unique_ptr<model::Model>> loaded = model::Model::load(
        o.model_dir,
        {.weights = o.weights_q8 ? model::WeightFormat::kQ8 : model::WeightFormat::kBF16,
         .logits_screen = env.logits_screen});
    if (!loaded.ok()) return fail(kExitModel, loaded.status().message());
    const model::Model& m = *loaded.value();

    runtime::EngineOptions eo;
    eo.slots = o.parallel;
    eo.max_queue = 2 * o.parallel;
    eo.admission_budget_ms = o.admission_budget_ms;
    // Every session setting, the QVL_* environment included (QVL_ISA, QVL_TRACE): the same
    // session a single run would get, with --parallel slots.
    runtime::SessionOptions so;
    so.threads = o.threads;
    so.ctx_size = o.ctx_size;
    so.min_image_tokens = o.image_min_tokens.value_or(0);
    so.max_image_tokens = o.image_max_tokens.value_or(0);
    apply_env_options(env, &so);
    base::Result<std::unique_ptr<runtime::Engine>> created = runtime::Engine::create(m, eo, so);
    if (!created.ok()) {
        return fail(
            created.status().code() == ErrorCode::kResourceExhausted ? kExitResource : kExitOther,
            created.status().message(), "lower -c/--ctx-size, --parallel or --image-max-tokens");
    }
    std::unique_ptr<runtime::Engine> engine = std::move(created).value();

    std::FILE* out = stdout;
    if (!o.output_file.empty()) {
        out = std::fopen(o.output_file.c_str(), "w");
        if (out == nullptr) return fail(kExitOther, fmt::format("cannot write {}", o.output_file));
    }
    // Progress only for a person at a terminal (the summary line at the end is always written).
    Output output(out, int(lines.size()), o.verbosity < 0 || ::isatty(STDERR_FILENO) == 0);
    const std::filesystem::path image_dir = std::filesystem::path(o.batch_file).parent_path();
    for (const auto& [number, text] : lines) {
        const std::string label = fmt::format("{}:{}", o.batch_file, number);
        base::Result<io::JsonValue> json = io::parse_json(text, label);
        if (!json.ok()) {
            output.write(error_line("null", number, json.status().message()), 0, true);
            continue;
        }
        const std::string id = id_json(json.value().find("id"));
        runtime::Request req;
        const base::Status st =
            parse_request(json.value(), label, image_dir, o, m, sampling_defaults, &req);
        if (!st.ok()) {
            output.write(error_line(id, number, st.message()), 0, true);
            continue;
        }
        req.on_done = [&output, id, line = number](const runtime::RequestResult& r) {
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
        const base::Result<runtime::RequestId> submitted = engine->submit(std::move(req));
        if (!submitted.ok()) {
            output.end();
            output.write(error_line(id, number, submitted.status().message()), 0, true);
        }
    }
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
