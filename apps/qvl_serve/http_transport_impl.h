// The inside of http::Transport, shared by its files: the acceptor and connection registry
// (http_transport.cpp), the per-connection coroutine (http_session.cpp) and the worker pool.
// Every member without a lock is touched by the I/O thread only.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http_transport.h"

namespace qvl::serve::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Connection {
    explicit Connection(tcp::socket s) : stream(std::move(s)) {}
    beast::tcp_stream stream;
    std::string client;
    // Waiting for a request (idle keep-alive or headers and body still arriving): such a
    // connection may be closed to make room under --max-connections. Not while a handler runs.
    bool waiting = true;
    bool registered = false;  // counted in the registry (forget() clears it once)
    Clock::time_point since = Clock::now();
    std::list<std::shared_ptr<Connection>>::iterator pos;
};

struct Route {
    std::string method, path;
    Handler handler;
    bool on_io_thread = false;
};

// Threads that run the handlers of complete requests, first come first served.
class WorkerPool {
  public:
    explicit WorkerPool(int threads);
    ~WorkerPool();
    void post(std::function<void()> job);
    int busy() const { return busy_.load(); }

  private:
    void loop();
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    bool stop_ = false;
    std::atomic<int> busy_{0};
    std::vector<std::thread> threads_;
};

struct Transport::Impl {
    Impl(Limits l, ErrorBody e) : limits(l), error_body(std::move(e)), acceptor(io) {}

    Limits limits;
    ErrorBody error_body;
    std::vector<Route> routes;
    Headers default_headers;
    std::function<void(int)> error_observer;
    std::function<void(const Request&, int)> logger;

    asio::io_context io;
    tcp::acceptor acceptor;
    std::unique_ptr<WorkerPool> workers;
    std::list<std::shared_ptr<Connection>> connections;  // oldest first
    std::map<std::string, int> per_client;
    std::atomic<int> connection_count{0};
    bool stopping = false;

    const Route* find_route(const std::string& method, const std::string& path) const;
    void start_accept();
    // Registers an accepted socket, or closes it (or an older waiting one) at the caps.
    void admit(tcp::socket socket);
    void forget(const std::shared_ptr<Connection>& c);
    void close_all();
};

// Runs one connection until it closes (http_session.cpp).
void spawn_session(Transport::Impl& t, const std::shared_ptr<Connection>& c);

// The status line and headers of a response; content_length < 0: chunked.
std::string response_head(int status, std::string_view content_type, long long content_length,
                          const Headers& extra, const Headers& defaults, bool keep_alive);

}  // namespace qvl::serve::http
