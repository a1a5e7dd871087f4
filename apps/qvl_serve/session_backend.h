// The Backend over the single-conversation runtime: one runtime::Session, one worker thread,
// requests served one at a time in arrival order from a bounded queue. Stop strings end
// generation through GenerateParams::cancel, as does cancel(). No batching and no prefix reuse:
// the multi-sequence runtime::Engine replaces this through an adapter with the same interface.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "backend.h"
#include "base/timer.h"
#include "runtime/session.h"

namespace qvl::serve {

class SessionBackend final : public Backend {
  public:
    // kResourceExhausted when the session's arenas do not fit the memory budget.
    static base::Result<std::unique_ptr<SessionBackend>> create(
        const model::Model& model, const runtime::SessionOptions& options, int max_queue);
    // Ends queued and running requests with "cancelled" and joins the worker.
    ~SessionBackend() override;

    base::Result<RequestId> submit(BackendRequest request) override;
    void cancel(RequestId id) override;
    Stats stats() const override;
    int ctx_size() const override { return session_->context_size(); }
    const model::Model& model() const override { return session_->model(); }

  private:
    struct Job {
        RequestId id = 0;
        BackendRequest request;
        base::Timer queued;
    };
    SessionBackend(std::unique_ptr<runtime::Session> session, int max_queue);
    void worker();
    void run(Job& job);

    std::unique_ptr<runtime::Session> session_;
    const int max_queue_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Job> queue_;
    RequestId next_id_ = 1;
    RequestId running_id_ = 0;  // 0: idle
    std::atomic<bool> cancel_running_{false};
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace qvl::serve
