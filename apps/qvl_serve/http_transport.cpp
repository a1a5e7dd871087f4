#include "http_transport.h"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/status.hpp>
#include <cerrno>

#include "http_transport_impl.h"

namespace qvl::serve::http {

std::string Request::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
    }
    return {};
}

std::string response_head(int status, std::string_view content_type, long long content_length,
                          const Headers& extra, const Headers& defaults, bool keep_alive) {
    const auto reason = beast::http::obsolete_reason(beast::http::int_to_status(unsigned(status)));
    std::string head =
        fmt::format("HTTP/1.1 {} {}\r\n", status, std::string_view(reason.data(), reason.size()));
    if (!content_type.empty()) head += fmt::format("Content-Type: {}\r\n", content_type);
    head += content_length < 0 ? std::string("Transfer-Encoding: chunked\r\n")
                               : fmt::format("Content-Length: {}\r\n", content_length);
    for (const Headers* hs : {&defaults, &extra}) {
        for (const auto& [k, v] : *hs) head += fmt::format("{}: {}\r\n", k, v);
    }
    head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    return head;
}

WorkerPool::WorkerPool(int threads) {
    for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { loop(); });
}

WorkerPool::~WorkerPool() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
}

void WorkerPool::post(std::function<void()> job) {
    {
        std::lock_guard lock(mu_);
        jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
}

void WorkerPool::loop() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
            if (jobs_.empty()) return;  // stopping and nothing left
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        busy_.fetch_add(1);
        job();
        busy_.fetch_sub(1);
    }
}

const Route* Transport::Impl::find_route(const std::string& method, const std::string& path) const {
    for (const Route& r : routes) {
        if (r.method == method && (r.path == path || r.path == "*")) return &r;
    }
    return nullptr;
}

void Transport::Impl::start_accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
        if (stopping || !acceptor.is_open()) return;
        if (ec == asio::error::no_descriptors || ec.value() == ENFILE || ec.value() == ENOBUFS ||
            ec.value() == ENOMEM) {
            // Out of file descriptors: pause accepting for a moment instead of spinning; the
            // pending connections wait in the listen backlog.
            auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(50));
            timer->async_wait([this, timer](boost::system::error_code) { start_accept(); });
            return;
        }
        if (!ec) admit(std::move(socket));
        start_accept();
    });
}

void Transport::Impl::admit(tcp::socket socket) {
    boost::system::error_code ec;
    const tcp::endpoint peer = socket.remote_endpoint(ec);
    if (ec) return;  // already gone
    std::string client = peer.address().to_string();
    const int per_client_cap = limits.max_connections_per_client;
    if (per_client_cap > 0 && per_client[client] >= per_client_cap) {
        socket.close(ec);  // over this client's cap: closed at once
        return;
    }
    if (connection_count.load() >= limits.max_connections) {
        // Full: make room by closing the oldest connection that is only waiting (idle, or
        // trickling a request), so slow and idle clients cannot lock everyone else out; when
        // every connection is running a request, the new one is closed instead.
        auto victim = std::find_if(connections.begin(), connections.end(),
                                   [](const auto& c) { return c->waiting; });
        if (victim == connections.end()) {
            socket.close(ec);
            return;
        }
        const std::shared_ptr<Connection> old = *victim;
        forget(old);
        old->stream.socket().close(ec);
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto c = std::make_shared<Connection>(std::move(socket));
    c->client = std::move(client);
    connections.push_back(c);
    c->pos = std::prev(connections.end());
    c->registered = true;
    ++per_client[c->client];
    connection_count.fetch_add(1);
    spawn_session(*this, c);
}

void Transport::Impl::forget(const std::shared_ptr<Connection>& c) {
    if (!c->registered) return;
    c->registered = false;
    connections.erase(c->pos);
    if (--per_client[c->client] <= 0) per_client.erase(c->client);
    connection_count.fetch_sub(1);
}

void Transport::Impl::close_all() {
    boost::system::error_code ec;
    for (const std::shared_ptr<Connection>& c : connections) {
        // A connection whose handler runs is shut down, not closed: the worker still writes to
        // its descriptor (and now fails at once); the session closes it when the handler ends.
        if (c->waiting) {
            c->stream.socket().close(ec);
        } else {
            c->stream.socket().shutdown(tcp::socket::shutdown_both, ec);
        }
    }
}

Transport::Transport(Limits limits, ErrorBody error_body)
    : impl_(std::make_unique<Impl>(limits, std::move(error_body))) {}

Transport::~Transport() {
    impl_->io.stop();
    impl_->workers.reset();
}

void Transport::route(std::string method, std::string path, Handler handler, bool on_io_thread) {
    impl_->routes.push_back({std::move(method), std::move(path), std::move(handler), on_io_thread});
}

void Transport::set_default_headers(Headers headers) {
    impl_->default_headers = std::move(headers);
}

void Transport::set_error_observer(std::function<void(int)> observer) {
    impl_->error_observer = std::move(observer);
}

void Transport::set_logger(std::function<void(const Request&, int)> logger) {
    impl_->logger = std::move(logger);
}

int Transport::bind(const std::string& host, int port, std::string* error) {
    boost::system::error_code ec;
    tcp::resolver resolver(impl_->io);
    const auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
        *error = fmt::format("cannot resolve '{}': {}", host, ec.message());
        return -1;
    }
    const tcp::endpoint ep = *results.begin();
    tcp::acceptor& a = impl_->acceptor;
    if (a.open(ep.protocol(), ec); !ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) a.bind(ep, ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        *error = port == 0 ? fmt::format("cannot listen on {} (any port): {}", host, ec.message())
                           : fmt::format(
                                 "cannot listen on {}:{} ({}; in use, or not an address "
                                 "of this machine?)",
                                 host, port, ec.message());
        a.close(ec);
        return -1;
    }
    return a.local_endpoint(ec).port();
}

void Transport::run() {
    impl_->workers = std::make_unique<WorkerPool>(impl_->limits.workers);
    impl_->start_accept();
    impl_->io.run();
}

void Transport::stop() {
    asio::post(impl_->io, [this] {
        impl_->stopping = true;
        boost::system::error_code ec;
        impl_->acceptor.close(ec);
        impl_->close_all();
    });
}

Transport::Stats Transport::stats() const {
    return {.connections = impl_->connection_count.load(),
            .busy_workers = impl_->workers ? impl_->workers->busy() : 0};
}

}  // namespace qvl::serve::http
