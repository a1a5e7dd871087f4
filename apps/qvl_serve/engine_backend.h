// The Backend over the multi-sequence runtime::Engine (engine/runtime/engine.h): slots, batched
// decode, chunked prefill, prefix reuse and the image-feature cache come from the Engine; this
// adapter only converts the request and result types, which mirror each other member for member.
#pragma once

#include <memory>

#include "backend.h"
#include "runtime/engine.h"

namespace qvl::serve {

class EngineBackend final : public Backend {
  public:
    // max_queue: requests that may wait while every slot is busy (serve.md's --max-queue). The
    // Engine counts a request as waiting until its scheduler admits it, even into a free slot,
    // so its own bound is set `slots` higher and the contract's is checked here.
    static base::Result<std::unique_ptr<EngineBackend>> create(const model::Model& model,
                                                               runtime::EngineOptions options,
                                                               int max_queue);

    base::Result<RequestId> submit(BackendRequest request) override;
    base::Result<std::vector<RequestId>> submit_group(
        std::vector<BackendRequest> requests) override;
    void cancel(RequestId id) override { engine_->cancel(id); }
    Stats stats() const override;
    int ctx_size() const override { return ctx_size_; }
    const model::Model& model() const override { return engine_->model(); }

  private:
    EngineBackend(std::unique_ptr<runtime::Engine> engine, int slots, int ctx_size, int max_queue)
        : engine_(std::move(engine)), slots_(slots), ctx_size_(ctx_size), max_queue_(max_queue) {}
    std::unique_ptr<runtime::Engine> engine_;
    int slots_ = 1;
    int ctx_size_ = 0;
    int max_queue_ = 0;
};

}  // namespace qvl::serve
