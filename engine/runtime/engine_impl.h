// The Engine's internals, shared by engine.cpp (the API, the scheduler loop, streaming and
// finishing requests) and engine_admit.cpp (admission in bounded pieces, the decode step).
// Not part of the public API.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/engine.h"
#include "runtime/image_cache.h"
#include "runtime/sampler.h"
#include "text/tokenizer.h"

namespace qvl::runtime {

namespace engine_detail {

// One request from submit to on_done.
struct Job {
    RequestId id = 0;
    Request req;
    RequestResult result;
    double submitted_ms = 0, first_token_ms = 0;
    std::unique_ptr<Sampler> sampler;
    std::unique_ptr<text::StreamDecoder> stream;
    std::size_t streamed = 0;  // bytes of result.text already passed to on_text
    std::size_t next_image = 0;
    // Identity of each image (content hash) and its merged grid, in prompt order.
    std::vector<ImageKey> image_hashes;
    std::vector<model::ImageGrid> grids;
    int keep = 0;                 // prompt tokens reused from the slot's KV
    std::size_t kept_images = 0;  // images whose pads lie in those tokens
    bool prefill_started = false;
    bool stop_string = false;   // ended on a stop string: the text was cut, nothing to flush
    std::int32_t pending = -1;  // sampled token whose decode step is still to run
    RequestId fork_of = 0;      // submit_group: the first request's id (0: none)
};

// Prefill chunks sized to an admission budget never go below this many tokens (smaller
// products lose much of their efficiency) nor above kMaxPrefillChunk.
inline constexpr int kMinBudgetedPrefillChunk = 64;

}  // namespace engine_detail

struct Engine::Impl {
    using Job = engine_detail::Job;

    const model::Model* model = nullptr;
    EngineOptions options;
    std::unique_ptr<Session> session;
    std::vector<std::int32_t> default_stops;

    mutable std::mutex mu;
    std::condition_variable cv;
    std::deque<std::unique_ptr<Job>> queue;  // guarded by mu
    std::vector<RequestId> cancels;          // guarded by mu
    bool stop = false;                       // guarded by mu
    bool forget = false;                     // guarded by mu: forget_prefixes() was called
    RequestId next_id = 1;                   // guarded by mu
    int busy = 0;                            // guarded by mu
    Stats counters;                          // guarded by mu (its busy and queue unused)

    // Scheduler thread only.
    std::vector<std::unique_ptr<Job>> slots;
    // The images whose features a slot's KV holds (for prefix reuse), in order.
    struct SlotImages {
        std::vector<ImageKey> hashes;
        std::vector<model::ImageGrid> grids;
    };
    std::vector<SlotImages> slot_images;
    std::unique_ptr<ImageFeatureCache> image_cache;  // null: off
    int admitting = -1;  // the slot whose images / prefill are under way
    // More requests wait and a slot is free for them (set each loop under mu).
    bool more_waiting = false;
    // Test hook QVL_FAULT_AFTER_TOKENS=N: every request fails with an engine error right after
    // its N-th token was streamed, so the servers' late-error paths (the error event after a
    // started stream, the 5xx of a non-streamed answer) can be tested end to end. -1: off.
    int fault_after_tokens = -1;
    // Measured prefill cost, to size chunks to the admission budget (0: not measured yet).
    double prefill_ms_per_token = 0;
    std::vector<RequestId> cancels_now;
    std::vector<std::unique_ptr<Job>> dropped;
    std::vector<int> batch_slots;
    std::vector<std::int32_t> batch_tokens;
    std::thread thread;

    void run();
    int reusable_prefix(int slot, const Job& j, std::size_t* kept_images) const;
    int pick_slot(Job& j) const;
    void step();
    bool streaming() const;
    void admit_within(double budget_ms);
    void admit_piece(double budget_ms);
    bool vision_piece(Job& j, double budget_ms);
    int prefill_chunk_for(double budget_ms) const;
    void decode_step();
    // After slot `from`'s prefill: queued requests of its group take free slots as copies.
    void fork_siblings(int from);
    void start_fork(int from, int to, Job& j);
    void take_token(int slot);
    bool emit_text(Job& j, std::int32_t token);
    void finish(int slot, const char* reason, base::Status error = {});
    void finish_job(Job& j, const char* reason, base::Status error);
    void count_finished(const Job& j);
    // submit()'s checks and the job it queues.
    base::Result<std::unique_ptr<Job>> make_job(Request request) const;
    base::Result<std::vector<RequestId>> queue_group(std::vector<Request> requests);
};

}  // namespace qvl::runtime
