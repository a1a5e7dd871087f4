#include "http_server.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <exception>

#include "chat_html.h"
#include "completion_reply.h"
#include "completion_stream.h"
#include "engine_request.h"
#include "openai_format.h"
#include "tool_stream.h"

namespace qvl::serve {
namespace {

using Clock = std::chrono::steady_clock;
// How often a waiting response checks that its client is still there: a client that goes away
// is noticed within this, and its request cancelled.
constexpr std::chrono::milliseconds kPollInterval(20);

// Compares without an early exit, so the time taken does not reveal how much of a key matched.
bool same_secret(std::string_view a, std::string_view b) {
    unsigned diff = a.size() == b.size() ? 0u : 1u;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff |= unsigned(static_cast<unsigned char>(a[i]) ^
                         static_cast<unsigned char>(b.empty() ? 0 : b[i % b.size()]));
    }
    return diff == 0;
}

ResponseTimings response_timings(const CompletionStream& stream, const Generation& r) {
    const double ttft = stream.ttft_seconds();
    return ResponseTimings{.engine = r.timings, .ttft_ms = ttft < 0 ? 0 : ttft * 1000.0};
}

// What a result that did not complete tells its client (a connected one: a client that went away
// is the other cause of "cancelled", and nobody hears about it).
ApiError late_error(const Generation& r) {
    if (r.finish_reason == "cancelled") {
        return {.status = 503,
                .type = "server_error",
                .code = "shutdown_deadline",
                .message =
                    "the server shut down before the answer was complete "
                    "(--shutdown-grace-s)"};
    }
    return {.status = 500,
            .type = "server_error",
            .code = "engine_error",
            .message = r.error.message()};
}

class SemaphoreGuard {
  public:
    explicit SemaphoreGuard(std::counting_semaphore<>& s) : s_(s) { s_.acquire(); }
    ~SemaphoreGuard() { s_.release(); }
    SemaphoreGuard(const SemaphoreGuard&) = delete;
    SemaphoreGuard& operator=(const SemaphoreGuard&) = delete;

  private:
    std::counting_semaphore<>& s_;
};

http::Limits transport_limits(const ServerConfig& c) {
    http::Limits l;
    l.max_body_bytes = c.max_body_bytes;
    l.header_timeout_s = c.header_timeout_s;
    l.max_connections = c.max_connections;
    l.max_connections_per_client = c.max_connections_per_client;
    l.workers = c.http_threads;
    return l;
}

}  // namespace

HttpServer::HttpServer(Engine& engine, const Model& model, ServerConfig config)
    : engine_(engine),
      model_(model),
      config_(std::move(config)),
      http_(std::make_unique<http::Transport>(
          transport_limits(config_),
          [](int status, std::string_view code, const std::string& message) {
              return error_json({.status = status,
                                 .type = status >= 500 ? "server_error" : "invalid_request_error",
                                 .code = std::string(code),
                                 .message = message});
          })),
      started_(std::time(nullptr)) {
    install_routes();
}

HttpServer::~HttpServer() = default;

void HttpServer::reply_error(http::Responder& res, const ApiError& e, const char* outcome,
                             const http::Headers& extra) {
    res.send(e.status, "application/json", error_json(e), extra);
    if (outcome != nullptr) metrics_.record({.outcome = outcome});
}

bool HttpServer::authorized(const http::Request& req, http::Responder& res) {
    if (config_.api_key.empty()) return true;
    const std::string auth = req.header("Authorization");
    if (same_secret(auth, "Bearer " + config_.api_key)) return true;
    reply_error(res,
                {.status = 401,
                 .type = "invalid_request_error",
                 .code = "invalid_api_key",
                 .message = auth.empty() ? "missing API key: send 'Authorization: Bearer KEY'"
                                         : "invalid API key in the Authorization header"},
                "rejected");
    return false;
}

void HttpServer::install_routes() {
    http::Transport& s = *http_;
    s.set_default_headers({{"Access-Control-Allow-Origin", "*"}});
    // Errors the transport answers itself (body too large, headers too large, malformed HTTP).
    s.set_error_observer([this](int) { metrics_.record({.outcome = "client_error"}); });
    if (config_.log_requests) {
        s.set_logger([](const http::Request& req, int status) {
            std::fprintf(stderr, "qvl-serve: %s %s %d\n", req.method.c_str(), req.path.c_str(),
                         status);
        });
    }
    constexpr bool kOnIoThread = true;  // quick answers that must never wait for a worker
    s.route(
        "GET", "/",
        [](const http::Request&, http::Responder& res) {
            res.send(200, "text/html; charset=utf-8",
                     std::string_view(kChatHtml, sizeof(kChatHtml) - 1));
        },
        kOnIoThread);
    s.route(
        "GET", "/health",
        [this](const http::Request&, http::Responder& res) {
            if (draining_.load()) {
                res.send(503, "application/json", "{\"status\":\"shutting_down\"}");
                return;
            }
            res.send(200, "application/json", "{\"status\":\"ok\"}");
        },
        kOnIoThread);
    s.route(
        "GET", "/v1/models",
        [this](const http::Request& req, http::Responder& res) {
            if (!authorized(req, res)) return;
            res.send(200, "application/json", models_json(config_.model_id, started_));
        },
        kOnIoThread);
    s.route(
        "GET", "/metrics",
        [this](const http::Request&, http::Responder& res) {
            res.send(200, "text/plain; version=0.0.4; charset=utf-8", metrics_text());
        },
        kOnIoThread);
    s.route("POST", "/v1/chat/completions", [this](const http::Request& req, http::Responder& res) {
        if (authorized(req, res)) handle_completion(req, res);
    });
    s.route("POST", "/tokenize", [this](const http::Request& req, http::Responder& res) {
        if (authorized(req, res)) handle_tokenize(req, res);
    });
    s.route("POST", "/detokenize", [this](const http::Request& req, http::Responder& res) {
        if (authorized(req, res)) handle_detokenize(req, res);
    });
    s.route(
        "OPTIONS", "*",
        [](const http::Request&, http::Responder& res) {
            res.send(204, "", "",
                     {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                      {"Access-Control-Allow-Headers", "Authorization, Content-Type"}});
        },
        kOnIoThread);
}

std::string HttpServer::metrics_text() const { return metrics_.format(engine_.stats()); }

std::optional<Request> HttpServer::prepare_request(ChatRequest& chat, CompletionReply& reply) {
    const auto fail = [&](const ApiError& e, const char* outcome) {
        reply.error(e);
        metrics_.record({.outcome = outcome});
    };
    // Image decoding (and fetching) can take seconds: a streamed reply gets keep-alives
    // meanwhile.
    std::optional<Result<Prompt>> built = reply.run([&] {
        const SemaphoreGuard guard(decode_slots_);
        return engine_.prepare(engine_messages(chat.messages), chat.tools);
    });
    if (!built) {
        metrics_.record({.outcome = "cancelled"});
        return std::nullopt;
    }
    Result<Prompt>& prompt = *built;
    if (!prompt.ok()) {
        const bool internal = prompt.status().code() == ErrorCode::kInternal ||
                              prompt.status().code() == ErrorCode::kResourceExhausted;
        fail({.status = internal ? 500 : 400,
              .type = internal ? "server_error" : "invalid_request_error",
              .message = prompt.status().message()},
             internal ? "error" : "client_error");
        return std::nullopt;
    }
    const Result<int> max_tokens =
        new_tokens(chat, int(prompt.value().token_ids().size()), engine_.context_size());
    if (!max_tokens.ok()) {
        fail({.code = "context_length_exceeded", .message = max_tokens.status().message()},
             "client_error");
        return std::nullopt;
    }
    return Request{.prompt = std::move(prompt).value(),
                   .max_tokens = max_tokens.value(),
                   .ignore_eos = chat.ignore_eos,
                   .sampling = request_sampling(model_, chat),
                   .stop = chat.stop,
                   .constraint = chat.constraint};
}

void HttpServer::handle_completion(const http::Request& req, http::Responder& res) {
    const Clock::time_point received = Clock::now();
    if (draining_.load()) {
        reply_error(res,
                    {.status = 503,
                     .type = "server_error",
                     .code = "shutting_down",
                     .message = "the server is shutting down"},
                    "rejected", {{"Retry-After", "1"}});
        return;
    }
    Result<ChatRequest> parsed = parse_chat_request(req.body, config_.parse_limits);
    if (!parsed.ok()) {
        reply_error(res, {.message = parsed.status().message()}, "client_error");
        return;
    }
    ChatRequest& chat = parsed.value();
    CompletionReply reply(res, chat.stream, config_.sse_keepalive_s);
    std::optional<Request> prepared = prepare_request(chat, reply);
    if (!prepared) return;
    std::vector<std::shared_ptr<CompletionStream>> streams;
    std::vector<Request> group;
    for (int i = 0; i < chat.n; ++i) {
        auto stream = std::make_shared<CompletionStream>(received);
        Request br = i + 1 < chat.n ? *prepared : std::move(*prepared);
        br.sampling.seed += std::uint64_t(i);  // choice i: seed + i, reproducible
        br.on_piece = [stream](const Piece& piece) { stream->push_text(piece.text); };
        if (chat.top_logprobs >= 0) {
            br.on_logprob = [stream](const TokenLogprob& e) { stream->push_logprobs(e); };
        }
        br.on_done = [this, stream](const Generation& r) { on_choice_done(*stream, r); };
        streams.push_back(std::move(stream));
        group.push_back(std::move(br));
    }
    in_flight_.fetch_add(1);
    Result<std::vector<RequestId>> submitted = submit(std::move(group));
    if (!submitted.ok()) {
        in_flight_.fetch_sub(1);
        refuse_submit(reply, submitted.status());
        return;
    }
    const std::vector<RequestId>& ids = submitted.value();
    {
        std::lock_guard lock(active_mu_);
        active_.insert(ids.begin(), ids.end());
    }
    const CompletionHeader header{.id = new_completion_id(),
                                  .model = chat.model.empty() ? config_.model_id : chat.model,
                                  .created = std::int64_t(std::time(nullptr))};
    const bool logprobs = chat.top_logprobs >= 0;
    const bool complete = chat.stream ? stream_answer(reply, streams, header, chat.include_usage,
                                                      logprobs, chat.tools)
                                      : whole_answer(reply, streams, header, logprobs, chat.tools);
    // A client gone before the end cancels its requests, and their slots free at once.
    if (!complete) {
        for (const RequestId id : ids) engine_.cancel(id);
    }
    {
        std::lock_guard lock(active_mu_);
        for (const RequestId id : ids) active_.erase(id);
    }
    in_flight_.fetch_sub(1);
}

void HttpServer::on_choice_done(CompletionStream& stream, const Generation& r) {
    // Counted before the stream ends, so a client that reads /metrics after its answer finds the
    // answer counted. Tokens without a streamed piece: the first came now (as finish() sees it).
    const double duration = std::chrono::duration<double>(Clock::now() - stream.received()).count();
    double ttft = stream.ttft_seconds();
    if (ttft < 0 && !r.tokens.empty()) ttft = duration;
    const bool cancelled = r.finish_reason == "cancelled";
    if (cancelled && cutting_.load()) cut_.fetch_add(1);
    metrics_.record({.outcome = cancelled && cutting_.load() ? "cut"
                                : cancelled                  ? "cancelled"
                                : r.finish_reason == "error" ? "error"
                                                             : "ok",
                     .ttft_s = ttft,
                     .duration_s = duration});
    stream.finish(r);
}

void HttpServer::refuse_submit(CompletionReply& reply, const Status& status) {
    const ErrorCode code = status.code();
    if (code == ErrorCode::kResourceExhausted) {
        reply.error({.status = 503,
                     .type = "server_error",
                     .code = "queue_full",
                     .message = status.message()},
                    {{"Retry-After", "1"}});
        metrics_.record({.outcome = "rejected"});
    } else {
        reply.error({.code = code == ErrorCode::kOutOfRange ? "context_length_exceeded" : "",
                     .message = status.message()});
        metrics_.record({.outcome = "client_error"});
    }
}

bool HttpServer::whole_answer(CompletionReply& reply,
                              const std::vector<std::shared_ptr<CompletionStream>>& streams,
                              const CompletionHeader& header, bool logprobs, const Tools& tools) {
    // Nothing is sent before the outcome is known: a late failure is an HTTP 5xx.
    std::vector<Generation> results(streams.size());
    std::size_t done = 0;
    while (done < streams.size()) {
        CompletionStream::Update u = streams[done]->take(kPollInterval);
        if (u.result) {
            const Generation& r = *u.result;
            if (r.finish_reason == "cancelled" || r.finish_reason == "error") {
                reply.error(late_error(r));
                return true;
            }
            results[done++] = r;
        } else if (reply.client_gone()) {
            return false;
        }
    }
    std::vector<std::string> lps;
    std::vector<ToolAnswer> answers;
    lps.reserve(results.size());
    for (const Generation& r : results) {
        lps.push_back(logprobs ? logprobs_json(r.logprobs, model_) : "");
        if (tools.calls_allowed()) answers.push_back(read_tool_answer(tools, r.text));
    }
    reply.send_json(200, completion_json(header, results, response_timings(*streams[0], results[0]),
                                         lps, answers));
    return true;
}

bool HttpServer::stream_answer(CompletionReply& reply,
                               const std::vector<std::shared_ptr<CompletionStream>>& streams,
                               const CompletionHeader& header, bool include_usage, bool logprobs,
                               const Tools& tools) {
    if (!reply.commit()) return false;
    const std::size_t n = streams.size();
    std::vector<ToolStream> readers;
    for (std::size_t i = 0; i < n && tools.calls_allowed(); ++i) readers.emplace_back(tools);
    std::vector<Generation> results(n);
    std::vector<bool> first(n, true), ended(n, false);
    std::size_t done = 0;
    const auto wait = n == 1 ? kPollInterval : kPollInterval / 4;
    while (done < n) {
        bool wrote = false;
        for (std::size_t i = 0; i < n; ++i) {
            if (ended[i]) continue;
            CompletionStream::Update u = streams[i]->take(wait);
            std::string out;
            if (!readers.empty()) {
                const std::string lp =
                    logprobs && !u.logprobs.empty() ? logprobs_json(u.logprobs, model_) : "";
                bool f = first[i];
                out = readers[i].push(header, int(i), u.text, lp, f);
                if (u.result) out += readers[i].finish(header, int(i), f);
                if (u.result && f) out += chunk_event(header, int(i), "", true);
                first[i] = f && !u.result;
            } else if (!u.text.empty() || !u.logprobs.empty() || (u.result && first[i])) {
                const std::string lp = logprobs ? logprobs_json(u.logprobs, model_) : "";
                out = chunk_event(header, int(i), u.text, first[i], lp);
                first[i] = false;
            }
            if (u.result) {
                const Generation& r = *u.result;
                if (r.finish_reason == "cancelled" || r.finish_reason == "error") {
                    if (!out.empty() && !reply.write(out)) return false;
                    reply.error(late_error(r));  // the error event, then [DONE]
                    return true;
                }
                out += final_chunk_event(
                    header, int(i),
                    finish_reason_with_calls(r.finish_reason,
                                             !readers.empty() && readers[i].has_calls()));
                results[i] = r;
                ended[i] = true;
                ++done;
            }
            if (!out.empty() && !reply.write(out)) return false;
            wrote = wrote || !out.empty();
        }
        // Queued, in vision or prefill, or between slow tokens: comments keep proxies from
        // cutting an idle connection.
        if (!wrote && (!reply.keep_alive_if_due() || reply.client_gone())) return false;
    }
    if (include_usage && !reply.write(usage_chunk_event(
                             header, results, response_timings(*streams[0], results[0])))) {
        return false;
    }
    reply.done();
    return true;
}

Result<int> HttpServer::bind(const std::string& host, int port) {
    std::string error;
    const int bound = http_->bind(host, port, &error);
    if (bound < 0) return app::error(ErrorCode::kIo, "{}", error);
    return bound;
}

Result<std::vector<RequestId>> HttpServer::submit(std::vector<Request> group) {
    const Engine::Stats s = engine_.stats();
    if (s.slots_busy + s.queue_length + int(group.size()) > s.slots + config_.max_queue) {
        return app::error(ErrorCode::kResourceExhausted,
                          "the server is busy: {} requests are waiting (--max-queue {})",
                          s.queue_length, config_.max_queue);
    }
    return engine_.submit_group(std::move(group));
}

void HttpServer::run() { http_->run(); }

void HttpServer::begin_drain() { draining_.store(true); }

void HttpServer::cancel_all() {
    std::set<RequestId> ids;
    {
        std::lock_guard lock(active_mu_);
        ids = active_;
    }
    cutting_.store(true);  // before the cancels: their results count as cut
    for (RequestId id : ids) engine_.cancel(id);
}

void HttpServer::stop() { http_->stop(); }

}  // namespace qvl::serve
