// One connection's life on the I/O thread (http_transport.h): wait for a request, read its
// headers within the total deadline and its body at the minimum rate, under the size limits;
// answer it (on this thread for on_io_thread routes, else on a worker while this coroutine
// waits without holding a thread), then the next request on the same connection.
// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>
// clang-format off
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
// clang-format on
#include <fmt/format.h>

#include <array>
#include <exception>
#include <optional>

#include "http_responders.h"
#include "http_transport_impl.h"

namespace qvl::serve::http {
namespace {

namespace bhttp = beast::http;
using asio::awaitable;
using boost::system::error_code;
using Parser = bhttp::request_parser<bhttp::string_body>;

Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

auto tokened(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

struct Failure {
    int status = 0;  // 0: close without an answer (the peer went away)
    std::string code, message;
};

bool peer_gone(const error_code& ec) {
    return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
           ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
           ec == asio::error::broken_pipe || ec == bhttp::error::partial_message;
}

Failure too_large(const Limits& l) {
    return {413, "request_too_large",
            fmt::format("the request body is over the limit of {} MiB (--max-body-mb)",
                        double(l.max_body_bytes) / double(1u << 20))};
}

Failure header_failure(const error_code& ec, const Parser& p, const Limits& l) {
    if (ec == bhttp::error::body_limit) return too_large(l);
    // A deadline passed: beast's stream has closed the socket already, nothing can be answered.
    if (ec == beast::error::timeout || peer_gone(ec)) return {};
    if (ec == bhttp::error::header_limit) {
        // The parser fills in the target once the request line is complete.
        if (p.get().target().empty()) {
            return {414, "uri_too_long",
                    fmt::format("the request line is over {} bytes", l.max_request_line)};
        }
        return {431, "header_too_large",
                fmt::format("the request headers are over {} bytes", l.max_header_bytes)};
    }
    return {400, "bad_request", "malformed HTTP request: " + ec.message()};
}

Failure body_failure(const error_code& ec, const Limits& l) {
    if (ec == bhttp::error::body_limit) return too_large(l);
    if (ec == beast::error::timeout || peer_gone(ec)) return {};  // too slow: closed
    return {400, "bad_request", "malformed HTTP request body: " + ec.message()};
}

std::optional<Failure> check_header(const Parser& p, const Limits& l) {
    const auto& h = p.get();
    if (h.method() == bhttp::verb::unknown) {
        return Failure{400, "bad_request",
                       fmt::format("unknown HTTP method '{}'", std::string(h.method_string()))};
    }
    if (h.target().size() > l.max_request_line) {
        return Failure{414, "uri_too_long",
                       fmt::format("the request target is over {} bytes", l.max_request_line)};
    }
    const auto fields = std::distance(h.begin(), h.end());
    if (fields > l.max_header_fields) {
        return Failure{
            431, "header_too_large",
            fmt::format("{} header fields, over the limit of {}", fields, l.max_header_fields)};
    }
    if (p.content_length() && *p.content_length() > l.max_body_bytes) return too_large(l);
    return std::nullopt;
}

// Reads one request into p; false with *f set (or f->status 0) when there is none to answer.
awaitable<bool> read_request(Transport::Impl& t, Connection& c, beast::flat_buffer& buf, Parser& p,
                             bool first, Failure* f) {
    const Limits& l = t.limits;
    beast::tcp_stream& s = c.stream;
    error_code ec;
    if (buf.size() == 0) {  // idle: nothing of the next request yet
        s.expires_after(seconds(first ? l.header_timeout_s : l.keepalive_idle_s));
        const std::size_t n = co_await s.async_read_some(buf.prepare(4096), tokened(ec));
        if (ec) co_return false;
        buf.commit(n);
    }
    s.expires_at(Clock::now() + seconds(l.header_timeout_s));  // total, from the first byte
    co_await bhttp::async_read_header(s, buf, p, tokened(ec));
    if (ec) {
        *f = header_failure(ec, p, l);
        co_return false;
    }
    if (std::optional<Failure> bad = check_header(p, l)) {
        *f = *bad;
        co_return false;
    }
    if (!p.is_done() && beast::iequals(p.get()[bhttp::field::expect], "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        co_await asio::async_write(s, asio::buffer(kContinue), tokened(ec));
        if (ec) co_return false;
    }
    // The body must keep a minimum rate, measured from its start: after a grace of
    // header_timeout_s, the deadline moves 1 s per min_body_bytes_per_s bytes received.
    const Clock::time_point body_start = Clock::now();
    double received = 0;
    while (!p.is_done()) {
        s.expires_at(body_start + seconds(l.header_timeout_s + received / l.min_body_bytes_per_s));
        received += double(co_await bhttp::async_read_some(s, buf, p, tokened(ec)));
        if (ec) {
            *f = body_failure(ec, l);
            co_return false;
        }
    }
    s.expires_never();
    co_return true;
}

// Answers with an error and closes: the rest of the request is not read, so after the answer
// the input is drained for a moment (the client then sees the answer, not a reset).
awaitable<void> send_failure(Transport::Impl& t, Connection& c, const Failure& f) {
    if (t.error_observer) t.error_observer(f.status);
    const std::string body = t.error_body(f.status, f.code, f.message);
    std::string msg =
        response_head(f.status, "application/json", static_cast<long long>(body.size()), {},
                      t.default_headers, false) +
        body;
    error_code ec;
    c.stream.expires_after(std::chrono::seconds(2));
    co_await asio::async_write(c.stream, asio::buffer(msg), tokened(ec));
    if (ec) co_return;
    c.stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    static std::array<char, 64 << 10> sink;  // only ever discarded into
    std::size_t drained = 0;
    c.stream.expires_after(std::chrono::seconds(1));
    while (!ec && drained < (16u << 20)) {
        drained += co_await c.stream.async_read_some(asio::buffer(sink), tokened(ec));
    }
}

Request to_request(Parser& p, const std::string& client) {
    auto& m = p.get();
    Request r;
    r.method = std::string(m.method_string());
    r.target = std::string(m.target());
    r.path = r.target.substr(0, r.target.find('?'));
    for (const auto& field : m) r.headers.emplace_back(field.name_string(), field.value());
    r.body = std::move(m.body());
    r.client = client;
    return r;
}

// Runs the handler on a worker; this coroutine waits on a timer that the worker cancels.
awaitable<bool> run_on_worker(Transport::Impl& t, Connection& c, const Route& route,
                              const Request& req, bool keep_alive) {
    asio::steady_timer done(t.io, Clock::time_point::max());
    bool finished = false, reusable = false;
    int status = 0;
    t.workers->post([&] {
        SocketResponder resp(c.stream.socket().native_handle(), t.default_headers, keep_alive,
                             t.limits.write_timeout_s);
        try {
            route.handler(req, resp);
        } catch (const std::exception& e) {
            if (!resp.started()) {
                resp.send(500, "application/json", t.error_body(500, "internal_error", e.what()),
                          {});
            }
        }
        if (!resp.started()) {
            resp.send(500, "application/json",
                      t.error_body(500, "internal_error", "the handler sent no response"), {});
        }
        reusable = resp.reusable();
        status = resp.status();
        asio::post(t.io, [&] {
            finished = true;
            done.cancel();
        });
    });
    error_code ec;
    while (!finished) co_await done.async_wait(tokened(ec));
    if (t.logger) t.logger(req, status);
    co_return reusable;
}

// Answers one request; false when the connection cannot carry another.
awaitable<bool> dispatch(Transport::Impl& t, Connection& c, const Request& req, bool keep_alive) {
    const Route* route = t.find_route(req.method, req.path);
    if (route == nullptr || route->on_io_thread) {
        BufferResponder resp(t.default_headers, keep_alive);
        if (route == nullptr) {
            resp.send(404, "application/json",
                      t.error_body(404, "not_found",
                                   fmt::format("unknown path: {} {}", req.method, req.path)),
                      {});
        } else {
            route->handler(req, resp);
            if (resp.status == 0) {
                resp.send(500, "application/json",
                          t.error_body(500, "internal_error", "no response"), {});
            }
        }
        error_code ec;
        c.stream.expires_after(seconds(t.limits.write_timeout_s));
        co_await asio::async_write(c.stream, asio::buffer(resp.out), tokened(ec));
        c.stream.expires_never();
        if (t.logger) t.logger(req, resp.status);
        co_return !ec;
    }
    c.waiting = false;  // a running request is never closed to make room
    const bool reusable = co_await run_on_worker(t, c, *route, req, keep_alive);
    c.waiting = true;
    c.since = Clock::now();
    co_return reusable;
}

awaitable<void> session(Transport::Impl& t, std::shared_ptr<Connection> c) {
    try {
        beast::flat_buffer buf;
        for (bool first = true;; first = false) {
            Parser p;
            p.header_limit(std::uint32_t(t.limits.max_header_bytes));
            p.body_limit(t.limits.max_body_bytes);
            Failure f;
            if (!co_await read_request(t, *c, buf, p, first, &f)) {
                if (f.status != 0 && !t.stopping) co_await send_failure(t, *c, f);
                break;
            }
            const bool keep_alive = p.keep_alive() && !t.stopping;
            const Request req = to_request(p, c->client);
            if (!co_await dispatch(t, *c, req, keep_alive) || !keep_alive || t.stopping) break;
        }
    } catch (const std::exception&) {
        // Bad allocation or the like in one connection: it closes, the server goes on.
    }
    t.forget(c);
    error_code ec;
    c->stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    c->stream.socket().close(ec);
}

}  // namespace

void spawn_session(Transport::Impl& t, const std::shared_ptr<Connection>& c) {
    asio::co_spawn(t.io, session(t, c), asio::detached);
}

}  // namespace qvl::serve::http
