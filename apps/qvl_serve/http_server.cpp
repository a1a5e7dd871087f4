#include "http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <exception>

#include "chat_html.h"
#include "completion_stream.h"
#include "engine_request.h"
#include "openai_format.h"

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

std::string public_finish_reason(const std::string& reason) {
    // "cancelled" only reaches a client that is still connected when the server shuts down.
    return reason == "length" ? "length" : "stop";
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

}  // namespace

HttpServer::HttpServer(Engine& engine, const Model& model, ServerConfig config)
    : engine_(engine),
      model_(model),
      config_(std::move(config)),
      http_(std::make_unique<httplib::Server>()),
      started_(std::time(nullptr)) {
    install_routes();
}

HttpServer::~HttpServer() = default;

void HttpServer::reply_error(httplib::Response& res, const ApiError& e, const char* outcome) {
    res.status = e.status;
    res.set_content(error_json(e), "application/json");
    if (outcome != nullptr) metrics_.record({.outcome = outcome});
}

void HttpServer::install_routes() {
    httplib::Server& s = *http_;
    const int threads = config_.http_threads;
    s.new_task_queue = [threads] { return new httplib::ThreadPool(std::size_t(threads)); };
    s.set_payload_max_length(config_.max_body_bytes);
    s.set_keep_alive_max_count(1000);
    s.set_tcp_nodelay(true);
    s.set_default_headers({{"Access-Control-Allow-Origin", "*"}});

    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (config_.api_key.empty() || !req.path.starts_with("/v1/") || req.method == "OPTIONS") {
            return httplib::Server::HandlerResponse::Unhandled;
        }
        const std::string auth = req.get_header_value("Authorization");
        if (same_secret(auth, "Bearer " + config_.api_key)) {
            return httplib::Server::HandlerResponse::Unhandled;
        }
        reply_error(res,
                    {.status = 401,
                     .type = "invalid_request_error",
                     .code = "invalid_api_key",
                     .message = auth.empty() ? "missing API key: send 'Authorization: Bearer KEY'"
                                             : "invalid API key in the Authorization header"},
                    "rejected");
        return httplib::Server::HandlerResponse::Handled;
    });

    // Errors httplib raises itself (unknown path, body too large, malformed HTTP) get the
    // OpenAI body too; responses that already have one are left alone.
    s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        ApiError e{.status = res.status};
        if (res.status == 404) {
            e.code = "not_found";
            e.message = fmt::format("unknown path: {} {}", req.method, req.path);
        } else if (res.status == 413) {
            e.code = "request_too_large";
            e.message = fmt::format("the request body is over the limit of {} MiB (--max-body-mb)",
                                    config_.max_body_bytes >> 20);
        } else if (res.status == 400) {
            e.message = "malformed HTTP request";
        } else {
            e.type = res.status >= 500 ? "server_error" : "invalid_request_error";
            e.message = fmt::format("HTTP status {}", res.status);
        }
        res.set_content(error_json(e), "application/json");
        if (res.status != 404) metrics_.record({.outcome = "client_error"});
    });
    s.set_exception_handler(
        [this](const httplib::Request&, httplib::Response& res, const std::exception_ptr& ep) {
            std::string what = "unknown exception";
            try {
                if (ep) std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            reply_error(res, {.status = 500, .type = "server_error", .message = what}, "error");
        });
    if (config_.log_requests) {
        s.set_logger([](const httplib::Request& req, const httplib::Response& res) {
            std::fprintf(stderr, "qvl-serve: %s %s %d\n", req.method.c_str(), req.path.c_str(),
                         res.status);
        });
    }

    s.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(kChatHtml, sizeof(kChatHtml) - 1, "text/html; charset=utf-8");
    });
    s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        if (draining_.load()) {
            res.status = 503;
            res.set_content("{\"status\":\"shutting_down\"}", "application/json");
            return;
        }
        res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(models_json(config_.model_id, started_), "application/json");
    });
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
    });
    s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
        handle_completion(req, res);
    });
    s.Options(R"(/.*)", [](const httplib::Request&, httplib::Response& res) {
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    });
}

std::string HttpServer::metrics_text() const {
    const Engine::Stats st = engine_.stats();
    return metrics_.format(st.slots_busy, st.slots, st.queue_length);
}

void HttpServer::handle_completion(const httplib::Request& req, httplib::Response& res) {
    const Clock::time_point received = Clock::now();
    if (draining_.load()) {
        res.set_header("Retry-After", "1");
        reply_error(res,
                    {.status = 503,
                     .type = "server_error",
                     .code = "shutting_down",
                     .message = "the server is shutting down"},
                    "rejected");
        return;
    }
    Result<ChatRequest> parsed = parse_chat_request(req.body, config_.parse_limits);
    if (!parsed.ok()) {
        reply_error(res, {.message = parsed.status().message()}, "client_error");
        return;
    }
    ChatRequest& chat = parsed.value();
    Result<Prompt> prompt = [&] {
        const SemaphoreGuard guard(decode_slots_);
        return engine_.prepare(engine_messages(chat));
    }();
    if (!prompt.ok()) {
        const bool internal = prompt.status().code() == ErrorCode::kInternal ||
                              prompt.status().code() == ErrorCode::kResourceExhausted;
        reply_error(res,
                    {.status = internal ? 500 : 400,
                     .type = internal ? "server_error" : "invalid_request_error",
                     .message = prompt.status().message()},
                    internal ? "error" : "client_error");
        return;
    }
    const Result<int> max_tokens =
        new_tokens(chat, int(prompt.value().token_ids().size()), engine_.context_size());
    if (!max_tokens.ok()) {
        reply_error(res,
                    {.code = "context_length_exceeded", .message = max_tokens.status().message()},
                    "client_error");
        return;
    }

    auto stream = std::make_shared<CompletionStream>(received);
    Request br{.prompt = std::move(prompt).value(),
               .max_tokens = max_tokens.value(),
               .ignore_eos = chat.ignore_eos,
               .sampling = request_sampling(model_, chat),
               .stop = chat.stop};
    br.on_piece = [stream](const Piece& piece) { stream->push_text(piece.text); };
    br.on_done = [this, stream](const Generation& r) {
        stream->finish(r);
        const double duration =
            std::chrono::duration<double>(Clock::now() - stream->received()).count();
        metrics_.record({.outcome = r.finish_reason == "cancelled" ? "cancelled"
                                    : r.finish_reason == "error"   ? "error"
                                                                   : "ok",
                         .prompt_tokens = r.timings.prompt_tokens,
                         .generated_tokens = int(r.tokens.size()),
                         .cached_prompt_tokens = r.timings.cached_prompt_tokens,
                         .image_cache_hits = r.timings.image_cache_hits,
                         .ttft_s = stream->ttft_seconds(),
                         .duration_s = duration});
    };
    in_flight_.fetch_add(1);
    Result<RequestId> submitted = submit(std::move(br));
    if (!submitted.ok()) {
        in_flight_.fetch_sub(1);
        const ErrorCode code = submitted.status().code();
        if (code == ErrorCode::kResourceExhausted) {
            res.set_header("Retry-After", "1");
            reply_error(res,
                        {.status = 503,
                         .type = "server_error",
                         .code = "queue_full",
                         .message = submitted.status().message()},
                        "rejected");
        } else {
            reply_error(res,
                        {.code = code == ErrorCode::kOutOfRange ? "context_length_exceeded" : "",
                         .message = submitted.status().message()},
                        "client_error");
        }
        return;
    }
    const RequestId id = submitted.value();
    {
        std::lock_guard lock(active_mu_);
        active_.insert(id);
    }
    const CompletionHeader header{.id = new_completion_id(),
                                  .model = chat.model.empty() ? config_.model_id : chat.model,
                                  .created = std::int64_t(std::time(nullptr))};
    // Runs when the response is done or abandoned: a client gone before the end cancels.
    auto release = [this, id](bool success) {
        if (!success) engine_.cancel(id);
        {
            std::lock_guard lock(active_mu_);
            active_.erase(id);
        }
        in_flight_.fetch_sub(1);
    };
    const auto timings = [stream](const Generation& r) {
        const double ttft = stream->ttft_seconds();
        return ResponseTimings{.engine = r.timings, .ttft_ms = ttft < 0 ? 0 : ttft * 1000.0};
    };

    if (!chat.stream) {
        res.set_chunked_content_provider(
            "application/json",
            [stream, header, timings](std::size_t, httplib::DataSink& sink) {
                CompletionStream::Update u = stream->take(kPollInterval);
                if (!u.result) return sink.is_writable();
                const Generation& r = *u.result;
                const std::string body =
                    r.finish_reason == "error"
                        ? error_json(
                              {.status = 500, .type = "server_error", .message = r.error.message()})
                        : completion_json(header, r, public_finish_reason(r.finish_reason),
                                          timings(r));
                if (!sink.write(body.data(), body.size())) return false;
                sink.done();
                return true;
            },
            release);
        return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    auto first = std::make_shared<bool>(true);
    const bool include_usage = chat.include_usage;
    res.set_chunked_content_provider(
        "text/event-stream",
        [stream, header, timings, first, include_usage](std::size_t, httplib::DataSink& sink) {
            CompletionStream::Update u = stream->take(kPollInterval);
            std::string out;
            if (!u.text.empty() || (u.result && *first)) {
                out = chunk_event(header, u.text, *first);
                *first = false;
            }
            if (u.result) {
                const Generation& r = *u.result;
                if (r.finish_reason == "error") {
                    out += "data: " +
                           error_json({.type = "server_error", .message = r.error.message()}) +
                           "\n\n";
                } else {
                    out += final_chunk_event(header, r, public_finish_reason(r.finish_reason),
                                             include_usage, timings(r));
                }
                out += "data: [DONE]\n\n";
            }
            if (out.empty()) return sink.is_writable();
            if (!sink.write(out.data(), out.size())) return false;
            if (u.result) sink.done();
            return true;
        },
        release);
}

Result<int> HttpServer::bind(const std::string& host, int port) {
    if (port == 0) {
        const int bound = http_->bind_to_any_port(host);
        if (bound < 0) {
            return app::error(ErrorCode::kIo, "cannot listen on {} (any port)", host);
        }
        return bound;
    }
    if (!http_->bind_to_port(host, port)) {
        return app::error(ErrorCode::kIo,
                          "cannot listen on {}:{} (in use, or not an address "
                          "of this machine?)",
                          host, port);
    }
    return port;
}

Result<RequestId> HttpServer::submit(Request request) {
    const Engine::Stats s = engine_.stats();
    if (s.slots_busy + s.queue_length >= s.slots + config_.max_queue) {
        return app::error(ErrorCode::kResourceExhausted,
                          "the server is busy: {} requests are waiting (--max-queue {})",
                          s.queue_length, config_.max_queue);
    }
    return engine_.submit(std::move(request));
}

void HttpServer::run() { http_->listen_after_bind(); }

void HttpServer::begin_drain() { draining_.store(true); }

void HttpServer::cancel_all() {
    std::set<RequestId> ids;
    {
        std::lock_guard lock(active_mu_);
        ids = active_;
    }
    for (RequestId id : ids) engine_.cancel(id);
}

void HttpServer::stop() { http_->stop(); }

}  // namespace qvl::serve
