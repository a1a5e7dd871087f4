#include "completion_reply.h"

namespace qvl::serve {

void CompletionReply::error(const ApiError& e, const http::Headers& extra) {
    if (!committed_) {
        res_.send(e.status, "application/json", error_json(e), extra);
        committed_ = true;
        return;
    }
    ApiError late = e;
    late.type = "server_error";  // the request was accepted: what failed is the server's
    write("data: " + error_json(late) + "\n\n");
    done();
}

bool CompletionReply::commit() {
    if (committed_) return true;
    committed_ = true;
    last_byte_ = Clock::now();
    return res_.begin_stream(200, "text/event-stream",
                             {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
}

bool CompletionReply::write(std::string_view events) {
    if (!commit()) return false;
    last_byte_ = Clock::now();
    return res_.write(events);
}

bool CompletionReply::keep_alive_if_due() {
    if (!stream_ || keepalive_ <= 0) return true;
    if (std::chrono::duration<double>(Clock::now() - last_byte_).count() < keepalive_) return true;
    return write(": keep-alive\n\n");
}

void CompletionReply::done() {
    if (!stream_) return;
    write("data: [DONE]\n\n");
    res_.end();
}

void CompletionReply::send_json(int status, std::string_view body) {
    committed_ = true;
    res_.send(status, "application/json", body);
}

}  // namespace qvl::serve
