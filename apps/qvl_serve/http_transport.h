// qvl-serve's HTTP/1.1 transport (shared docs/serve.md, issue 47): one I/O thread reads every
// connection asynchronously (Boost.Asio and Beast), so idle keep-alives and slow clients cost a
// socket and a little memory, never a thread; only complete, valid requests reach a worker
// thread. The limits are enforced while reading: the body limit for every framing
// (Content-Length, chunked) as soon as it is passed, header size, count and request-line limits,
// a total deadline for the headers and a minimum body rate measured from the first byte, and
// caps on connections in total and per client address. Routes marked on_io_thread (/health,
// /metrics) are answered by the I/O thread itself, so they answer while every worker is busy.
// This header has no Boost in it: the model-facing code only sees Request and Responder.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qvl::serve::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
    std::string method;
    std::string target;  // as sent: the path and the query
    std::string path;    // the target without its query
    Headers headers;
    std::string body;
    std::string client;  // the peer's address
    // The first header of that name (case-insensitive); "" when absent.
    std::string header(std::string_view name) const;
};

// One response: either send() once, or begin_stream(), write() as often as needed, end().
// Nothing is on the wire before send() or begin_stream(), so a handler can still choose the
// status until it knows the outcome.
class Responder {
  public:
    virtual ~Responder() = default;
    virtual void send(int status, std::string_view content_type, std::string_view body,
                      const Headers& extra = {}) = 0;
    // A chunked response; false when the client is gone.
    virtual bool begin_stream(int status, std::string_view content_type,
                              const Headers& extra = {}) = 0;
    // False when the client is gone or did not read for the write timeout.
    virtual bool write(std::string_view data) = 0;
    virtual void end() = 0;
    // True once the peer closed or reset the connection (checked without blocking).
    virtual bool client_gone() = 0;
};

using Handler = std::function<void(const Request&, Responder&)>;

struct Limits {
    std::size_t max_body_bytes = 64u << 20;    // --max-body-mb: any framing
    std::size_t max_header_bytes = 16u << 10;  // request line and header fields together: 431
    std::size_t max_request_line = 8u << 10;   // the request target: 414
    int max_header_fields = 100;               // 431
    double header_timeout_s = 10;              // --header-timeout-s: from the request's first byte
    double min_body_bytes_per_s = 16u << 10;   // after header_timeout_s of grace
    double keepalive_idle_s = 30;              // between requests on one connection
    double write_timeout_s = 30;               // a client that reads nothing that long is dropped
    int max_connections = 1024;                // --max-connections
    int max_connections_per_client = 64;       // --max-connections-per-client (0: no cap)
    int workers = 64;                          // threads running handlers not on the I/O thread
};

// The body of an error the transport answers by itself (413, 431, 414, 400, 404, 408).
using ErrorBody =
    std::function<std::string(int status, std::string_view code, const std::string& message)>;

class Transport {
  public:
    Transport(Limits limits, ErrorBody error_body);
    ~Transport();
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    // path "*" matches every path of that method. on_io_thread: the handler runs on the I/O
    // thread and must be quick and never block (it may only send()).
    void route(std::string method, std::string path, Handler handler, bool on_io_thread = false);
    void set_default_headers(Headers headers);  // added to every response
    // Called (on the I/O thread) for each error the transport answers by itself.
    void set_error_observer(std::function<void(int status)> observer);
    // Called after each response with the method, path and status (request logging).
    void set_logger(std::function<void(const Request&, int status)> logger);

    // Binds host:port (port 0: any free port). Returns the port, or -1 with *error set.
    int bind(const std::string& host, int port, std::string* error);
    void run();   // serves until stop(); blocks
    void stop();  // closes the listener and every connection; run() returns

    struct Stats {
        int connections = 0;
        int busy_workers = 0;
    };
    Stats stats() const;

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace qvl::serve::http
