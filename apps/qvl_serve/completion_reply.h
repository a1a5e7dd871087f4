// How one chat completion answer reaches its client (shared docs/serve.md, issue 47). Nothing
// is committed before it has to be: a non-streamed answer is sent whole once its outcome is
// known (so a late failure is an HTTP 5xx, not a 200); a streamed one is committed when the
// request is accepted, or earlier when the client has waited --sse-keepalive-s (image decoding),
// and from then on gets ": keep-alive" comment lines whenever that long passes without a byte,
// and a failure ends it with an error event before "data: [DONE]".
#pragma once

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <string_view>

#include "http_transport.h"
#include "openai_format.h"

namespace qvl::serve {

class CompletionReply {
  public:
    using Clock = std::chrono::steady_clock;
    CompletionReply(http::Responder& res, bool stream, double keepalive_s)
        : res_(res), stream_(stream), keepalive_(keepalive_s) {}

    bool streamed() const { return stream_; }
    bool committed() const { return committed_; }
    // The HTTP error before anything was committed; afterwards (streams) the error event and
    // [DONE].
    void error(const ApiError& e, const http::Headers& extra = {});
    // Streams: sends the 200 event-stream header now. False when the client is gone.
    bool commit();
    // Streams: writes SSE text (events); false when the client is gone.
    bool write(std::string_view events);
    // Streams: a comment line if the keep-alive interval passed without a byte (committing
    // first if needed); false when the client is gone.
    bool keep_alive_if_due();
    // Streams: "data: [DONE]" and the end of the chunked body.
    void done();
    // Non-streamed: the whole answer.
    void send_json(int status, std::string_view body);
    bool client_gone() { return res_.client_gone(); }

    // Runs fn (image decoding, prompt building) on its own thread; meanwhile a streamed reply
    // gets keep-alives. Returns fn's result, or nullopt when the client went away meanwhile
    // (fn is still waited for: it may refer to the caller's objects).
    template <typename F>
    auto run(F fn) -> std::optional<decltype(fn())> {
        if (!stream_ || keepalive_ <= 0) return fn();
        std::future<decltype(fn())> result = std::async(std::launch::async, std::move(fn));
        bool gone = false;
        while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
            if (!gone) gone = !keep_alive_if_due() || client_gone();
        }
        if (gone) return std::nullopt;
        return result.get();
    }

  private:
    http::Responder& res_;
    bool stream_;
    double keepalive_;
    bool committed_ = false;
    Clock::time_point last_byte_ = Clock::now();
};

}  // namespace qvl::serve
