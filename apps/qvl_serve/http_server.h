// qvl-serve's HTTP side (shared docs/serve.md): routes, API key, limits, OpenAI error bodies,
// Server-Sent Events, metrics, and the drain that graceful shutdown needs. The model work goes
// through the public qvl::Engine (submit, stream, cancel, stats).
#pragma once

#include <qvl/qvl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <semaphore>
#include <set>
#include <string>

#include "chat_request.h"
#include "metrics.h"
#include "openai_format.h"
#include "serve_options.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace qvl::serve {

struct ServerConfig {
    std::string model_id;  // the model folder's name (GET /v1/models)
    std::string api_key;   // empty: no key needed
    std::size_t max_body_bytes = 64u << 20;
    int http_threads = 64;
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
    // Cancels every running request (the end of the grace period).
    void cancel_all();
    // Closes the listening socket and every connection; run() returns.
    void stop();

  private:
    void install_routes();
    void handle_completion(const httplib::Request& req, httplib::Response& res);
    void reply_error(httplib::Response& res, const ApiError& e, const char* outcome);
    std::string metrics_text() const;

    Result<RequestId> submit(Request request);

    Engine& engine_;
    Model model_;
    ServerConfig config_;
    std::unique_ptr<httplib::Server> http_;
    Metrics metrics_;
    std::int64_t started_ = 0;
    std::atomic<bool> draining_{false};
    std::atomic<int> in_flight_{0};
    // Image decoding is bounded to a few at once: each may need up to --max-image-pixels * 3
    // bytes, and the compute threads are busy anyway.
    std::counting_semaphore<> decode_slots_{2};
    std::mutex active_mu_;
    std::set<RequestId> active_;
};

}  // namespace qvl::serve
