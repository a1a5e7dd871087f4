// The hand-off between the Engine's thread and the HTTP thread writing one response: the
// Engine appends text pieces and, once, the result; the HTTP thread waits for them with a
// timeout so that it can notice a client that went away (and cancel the request) while the
// model is still thinking.
#pragma once

#include <qvl/qvl.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>

namespace qvl::serve {

class CompletionStream {
  public:
    using Clock = std::chrono::steady_clock;
    explicit CompletionStream(Clock::time_point received) : received_(received) {}

    // Engine side (quick, never blocks on the client).
    void push_text(std::string_view piece);
    void push_logprobs(const TokenLogprob& entry);
    void finish(const Generation& result);

    struct Update {
        std::string text;                    // everything pushed since the last take
        std::vector<TokenLogprob> logprobs;  // likewise
        std::optional<Generation> result;    // set once the request is done
    };
    // HTTP side: waits up to `timeout` for text or the result, then takes what is there.
    Update take(std::chrono::milliseconds timeout);

    // Seconds from arrival to the first piece (or to the end when there was none); -1 before.
    double ttft_seconds() const;
    Clock::time_point received() const { return received_; }

  private:
    const Clock::time_point received_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::string pending_;
    std::vector<TokenLogprob> pending_logprobs_;
    std::optional<Generation> result_;
    bool result_taken_ = false;
    std::optional<Clock::time_point> first_token_;
};

}  // namespace qvl::serve
