#include "completion_stream.h"

namespace qvl::serve {

void CompletionStream::push_text(std::string_view piece) {
    {
        std::lock_guard lock(mu_);
        if (!first_token_) first_token_ = Clock::now();
        pending_.append(piece);
    }
    cv_.notify_all();
}

void CompletionStream::push_logprobs(const TokenLogprob& entry) {
    {
        std::lock_guard lock(mu_);
        pending_logprobs_.push_back(entry);
    }
    cv_.notify_all();
}

void CompletionStream::finish(const Generation& result) {
    {
        std::lock_guard lock(mu_);
        if (!first_token_ && !result.tokens.empty()) first_token_ = Clock::now();
        result_ = result;
    }
    cv_.notify_all();
}

CompletionStream::Update CompletionStream::take(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] {
        return !pending_.empty() || !pending_logprobs_.empty() ||
               (result_.has_value() && !result_taken_);
    });
    Update u;
    u.text.swap(pending_);
    u.logprobs.swap(pending_logprobs_);
    if (result_ && !result_taken_) {
        u.result = result_;
        result_taken_ = true;
    }
    return u;
}

double CompletionStream::ttft_seconds() const {
    std::lock_guard lock(mu_);
    if (!first_token_) return -1;
    return std::chrono::duration<double>(*first_token_ - received_).count();
}

}  // namespace qvl::serve
