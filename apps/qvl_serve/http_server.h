// qvl-serve's HTTP side (shared docs/serve.md): routes, API key, OpenAI error bodies, Server-Sent
// Events, metrics, and the drain that graceful shutdown needs, over the transport of
// http_transport.h (connections, limits, deadlines). The model work goes through the public
// qvl::Engine (prepare, submit, stream, cancel, stats).
#pragma once

#include <qvl/qvl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <semaphore>
#include <set>
#include <string>
#include <vector>

#include "chat_request.h"
#include "completion_reply.h"
#include "completion_stream.h"
#include "http_transport.h"
#include "metrics.h"
#include "openai_format.h"
#include "serve_options.h"

namespace qvl::serve {

struct ServerConfig {
    std::string model_id;  // the model folder's name (GET /v1/models)
    std::string api_key;   // empty: no key needed
    std::size_t max_body_bytes = 64u << 20;
    int http_threads = 64;  // handler threads
    int max_connections = 1024;
    int max_connections_per_client = 64;  // 0: no cap
    double header_timeout_s = 10;
    double sse_keepalive_s = 15;  // 0: off
    bool log_requests = false;
    ParseLimits parse_limits;
    // --max-queue: requests that may wait while every slot is busy. The Engine counts a request
    // as waiting until its scheduler admits it, even into a free slot, so the Engine's own
    // bound is set `slots` higher and this one is checked here.
    int max_queue = 64;
};

class HttpServer {
  public:
    HttpServer(Engine& engine, const Model& model, ServerConfig config);
    ~HttpServer();

    // Binds host:port (port 0: any free port) and returns the port bound.
    Result<int> bind(const std::string& host, int port);
    // Serves until stop(); blocks.
    void run();
    // Graceful shutdown, first half: new completion requests get 503, running ones continue.
    void begin_drain();
    // Requests submitted and not yet finished (including their response being written).
    int in_flight() const { return in_flight_.load(); }
    // Cancels every running request (the end of the grace period): their answers end with an
    // error (code "shutdown_deadline") and count as "cut" in /metrics.
    void cancel_all();
    int answers_cut() const { return cut_.load(); }
    // Closes the listening socket and every connection; run() returns.
    void stop();

  private:
    void install_routes();
    // The API key check of /v1/*; false after answering 401.
    bool authorized(const http::Request& req, http::Responder& res);
    void handle_completion(const http::Request& req, http::Responder& res);
    // The prompt (images decoded) and generation settings; nullopt after answering the error.
    std::optional<Request> prepare_request(ChatRequest& chat, CompletionReply& reply);
    // Engine::submit_group behind the --max-queue check (kResourceExhausted when full).
    Result<std::vector<RequestId>> submit(std::vector<Request> group);
    void reply_error(http::Responder& res, const ApiError& e, const char* outcome,
                     const http::Headers& extra = {});
    // The answer of the request's choices once submitted; false when the client went away
    // before its end.
    // tools: when they allow calls, each answer is read for them.
    bool whole_answer(CompletionReply& reply,
                      const std::vector<std::shared_ptr<CompletionStream>>& streams,
                      const CompletionHeader& header, bool logprobs, const Tools& tools);
    bool stream_answer(CompletionReply& reply,
                       const std::vector<std::shared_ptr<CompletionStream>>& streams,
                       const CompletionHeader& header, bool include_usage, bool logprobs,
                       const Tools& tools);
    // POST /tokenize and /detokenize (http_tokenize.cpp).
    void handle_tokenize(const http::Request& req, http::Responder& res);
    void handle_detokenize(const http::Request& req, http::Responder& res);
    // A choice's result: its stream ends, the metrics count its outcome (the engine its tokens).
    void on_choice_done(CompletionStream& stream, const Generation& r);
    // The answer to a refused submit (503 when the queue is full, else 400).
    void refuse_submit(CompletionReply& reply, const Status& status);
    std::string metrics_text() const;

    Engine& engine_;
    Model model_;
    ServerConfig config_;
    std::unique_ptr<http::Transport> http_;
    Metrics metrics_;
    std::int64_t started_ = 0;
    std::atomic<bool> draining_{false};
    std::atomic<bool> cutting_{false};  // cancel_all() ran: cancelled answers were cut
    std::atomic<int> cut_{0};
    std::atomic<int> in_flight_{0};
    // Image decoding is bounded to a few at once: each may need up to --max-image-pixels * 3
    // bytes, and the compute threads are busy anyway.
    std::counting_semaphore<> decode_slots_{2};
    std::mutex active_mu_;
    std::set<RequestId> active_;
};

}  // namespace qvl::serve
