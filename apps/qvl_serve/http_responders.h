// The two ways a response leaves the transport (http_transport.h): collected in a string for a
// handler that runs on the I/O thread, or written straight to the socket by a worker thread.
#pragma once

#include <string>

#include "http_transport.h"

namespace qvl::serve::http {

// For handlers on the I/O thread: they may only send(); the session writes `out`.
class BufferResponder final : public Responder {
  public:
    BufferResponder(const Headers& defaults, bool keep_alive)
        : defaults_(defaults), keep_alive_(keep_alive) {}
    void send(int status, std::string_view content_type, std::string_view body,
              const Headers& extra) override;
    bool begin_stream(int, std::string_view, const Headers&) override { return false; }
    bool write(std::string_view) override { return false; }
    void end() override {}
    bool client_gone() override { return false; }

    std::string out;
    int status = 0;

  private:
    const Headers& defaults_;
    bool keep_alive_;
};

// For handlers on a worker thread: blocking writes on the connection's descriptor with a
// deadline per write (poll), so a client that stops reading is dropped after the timeout.
class SocketResponder final : public Responder {
  public:
    SocketResponder(int fd, const Headers& defaults, bool keep_alive, double write_timeout_s)
        : fd_(fd), defaults_(defaults), keep_alive_(keep_alive), timeout_s_(write_timeout_s) {}
    void send(int status, std::string_view content_type, std::string_view body,
              const Headers& extra) override;
    bool begin_stream(int status, std::string_view content_type, const Headers& extra) override;
    bool write(std::string_view data) override;
    void end() override;
    bool client_gone() override;

    bool started() const { return started_; }
    // The response went out whole: the connection can carry the next request.
    bool reusable() const { return done_ && !failed_; }
    int status() const { return status_; }

  private:
    bool write_all(std::string_view data);
    int fd_;
    const Headers& defaults_;
    bool keep_alive_;
    double timeout_s_;
    bool started_ = false, streaming_ = false, done_ = false, failed_ = false;
    int status_ = 0;
};

}  // namespace qvl::serve::http
