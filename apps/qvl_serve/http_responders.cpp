#include "http_responders.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>

#include "http_transport_impl.h"

namespace qvl::serve::http {

void BufferResponder::send(int status_code, std::string_view content_type, std::string_view body,
                           const Headers& extra) {
    if (status != 0) return;
    status = status_code;
    out = response_head(status_code, content_type, static_cast<long long>(body.size()), extra,
                        defaults_, keep_alive_);
    out += body;
}

void SocketResponder::send(int status, std::string_view content_type, std::string_view body,
                           const Headers& extra) {
    if (started_) return;
    started_ = true;
    status_ = status;
    std::string msg = response_head(status, content_type, static_cast<long long>(body.size()),
                                    extra, defaults_, keep_alive_);
    msg += body;
    done_ = write_all(msg);
}

bool SocketResponder::begin_stream(int status, std::string_view content_type,
                                   const Headers& extra) {
    if (started_) return false;
    started_ = true;
    streaming_ = true;
    status_ = status;
    return write_all(response_head(status, content_type, -1, extra, defaults_, keep_alive_));
}

bool SocketResponder::write(std::string_view data) {
    if (!streaming_ || done_ || failed_) return false;
    if (data.empty()) return true;  // an empty chunk would end the response
    return write_all(fmt::format("{:x}\r\n{}\r\n", data.size(), data));
}

void SocketResponder::end() {
    if (!streaming_ || done_) return;
    done_ = write_all("0\r\n\r\n");
}

bool SocketResponder::client_gone() {
    if (failed_) return true;
    pollfd p{.fd = fd_, .events = POLLRDHUP, .revents = 0};
    if (::poll(&p, 1, 0) < 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool SocketResponder::write_all(std::string_view data) {
    if (failed_) return false;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s_));
    while (!data.empty()) {
        const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            data.remove_prefix(std::size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            pollfd p{.fd = fd_, .events = POLLOUT, .revents = 0};
            if (left.count() > 0 && ::poll(&p, 1, int(left.count())) > 0 &&
                (p.revents & POLLOUT) != 0) {
                continue;
            }
        }
        failed_ = true;  // gone, reset, or not reading for the write timeout
        return false;
    }
    return true;
}

}  // namespace qvl::serve::http
