// Engine: many requests over one Model. One Session with `slots` KV regions (one static arena,
// one compute thread pool), a queue of requests waiting for a slot, and a scheduler thread that
// interleaves the work: each step it runs bounded pieces of an admitted request (vision tower
// nodes, prefill chunks) for at most EngineOptions::admission_budget_ms, then one batched
// decode step for every slot that is generating, so running sequences keep streaming while a
// new one is admitted. When nobody is decoding yet, requests that arrive together are admitted
// back to back, unbounded, and then decode together. A sequence's tokens never depend on what
// else is in the batch (Session::decode_batch) nor on how its admission was cut.
// Callbacks run on the scheduler thread: they must be quick and must not call back into the
// Engine except cancel().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "graph/executor.h"
#include "kernels/isa.h"
#include "model/model.h"
#include "runtime/generate.h"
#include "runtime/session.h"

namespace qvl::runtime {

struct EngineOptions {
    int threads = 0;           // compute threads; 0 = one per physical core
    int slots = 1;             // sequences served at once
    int ctx_size = 4096;       // KV tokens per slot
    int max_image_tokens = 0;  // per-image visual-token budget; 0 = default_max_image_tokens
    Precision precision = Precision::kAuto;
    int max_queue = 64;  // requests waiting for a slot; submit() past that -> kResourceExhausted
    std::size_t image_cache_mb = 256;  // image-feature cache (0 = off)
    // While other sequences are decoding, each scheduler step spends at most about this long
    // admitting a new request (vision tower nodes, a prefill chunk sized from the measured
    // prefill rate, at least one node or kMinBudgetedPrefillChunk tokens) before their decode
    // step, so their inter-token gap stays near budget + one step. 0: no bound (each piece is
    // a whole image or a 512-token chunk). With nobody decoding, admission is never bounded.
    // The default and what it costs are measured in bench/README.md ("Admission budget").
    double admission_budget_ms = 500;
    bool profile = false;
};

struct RequestTimings {  // milliseconds
    double queue = 0, image_decode = 0, vision = 0, prefill = 0, ttft = 0, decode = 0, total = 0;
};

struct RequestResult {
    std::vector<std::int32_t> tokens;  // generated ids
    std::string text;
    std::string finish_reason;  // "stop" | "length" | "cancelled" | "error"
    base::Status error;         // set when finish_reason == "error"
    int prompt_tokens = 0;
    int cached_prompt_tokens = 0;  // prefix reused from a slot's KV
    int image_cache_hits = 0;
    int decode_steps = 0;  // forward passes after the prefill that included this request
    RequestTimings timings;
    // One per generated token when params.top_logprobs >= 0.
    std::vector<TokenLogprobs> logprobs;
};

struct Request {
    PreparedPrompt prompt;  // from prepare_chat_prompt / prepare_raw_prompt (generate.h)
    // n_predict, ignore_eos, sampling (incl. seed), stop_ids (empty: default_stop_ids), cancel:
    // when set and it becomes true, the request ends "cancelled" before its next token (the
    // flag is read once per token on the scheduler thread, so a prefill runs to its end;
    // Engine::cancel also stops one mid-prefill).
    GenerateParams params;
    // The repetition and presence penalties count the prompt's ids from this index on: a turn
    // that resends the conversation so far (to continue it in the slot's KV) counts only its
    // own new ids, as a generation appended to a held context does.
    std::size_t penalty_from = 0;
    std::vector<std::string> stop_strings;  // OpenAI `stop`: generation ends before the match
    std::function<void(std::string_view piece, std::int32_t token)>
        on_text;                                        // streamed, UTF-8 safe
    std::function<void(const RequestResult&)> on_done;  // exactly once, last
    // With params.top_logprobs >= 0: each generated token's log-probabilities, as soon as the
    // token is kept (before the on_text call that streams its text, which a UTF-8 character or
    // a stop string may hold back).
    std::function<void(const TokenLogprobs&)> on_logprobs;
    // Optional views into the work (for one-shot tools: --dump-vision, --dump-logits, progress).
    // on_vision_node is the graph observer while this request's images run through the vision
    // tower; after_vision runs once its images are encoded (images reused from a slot's KV are
    // not encoded again), before its prefill; after_prefill runs once the prompt is in the
    // slot's KV, when session.logits(slot) gives the last prompt token's logits (computed on
    // that call when the model has a logits screen: a hook that does not ask costs nothing).
    graph::Observer on_vision_node;
    std::function<void(const Session&)> after_vision;
    std::function<void(const Session& session, int slot)> after_prefill;
};

using RequestId = std::uint64_t;

class Engine {
  public:
    static base::Result<std::unique_ptr<Engine>> create(const model::Model& model,
                                                        const EngineOptions& options);
    // The same with every session setting given (kernel tier, trace directory, minimum image
    // tokens, ...): `session`'s slots are options.slots; its other fields replace the ones
    // EngineOptions shares with it.
    static base::Result<std::unique_ptr<Engine>> create(const model::Model& model,
                                                        const EngineOptions& options,
                                                        const SessionOptions& session);
    ~Engine();  // stops the scheduler thread; pending requests finish with "cancelled"
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Thread-safe. Queues the request; kResourceExhausted when the queue is full, kOutOfRange
    // when the prompt cannot fit a slot's context (checked before queueing).
    base::Result<RequestId> submit(Request request);
    // Thread-safe. Several choices from one prompt (OpenAI's n): every request must have the
    // same prompt (ids and images); their settings and callbacks are their own (per-choice
    // seeds are the caller's). They are queued together; when the first one's prefill ends,
    // the others that find a free slot start from a copy of its slot (Session::fork_slot: KV
    // and logits, bit for bit) instead of prefilling, and their cached_prompt_tokens is the
    // whole prompt. One that finds no free slot then is admitted later like any request. The
    // ids are in the order given; refused as a whole.
    base::Result<std::vector<RequestId>> submit_group(std::vector<Request> requests);
    // Thread-safe, idempotent. The request ends with "cancelled" within one step; its slot frees.
    void cancel(RequestId id);
    struct Stats {
        int slots_busy = 0;
        int queue_length = 0;
        // Since create: requests queued, refused by submit (every request of a refused group),
        // and finished by finish_reason.
        std::uint64_t submitted = 0, refused = 0;
        std::uint64_t stopped = 0, length = 0, cancelled = 0, failed = 0;
        // Over finished requests: prompt tokens (a group's prompt once), those reused from a
        // slot's KV, generated tokens, images whose features came from the cache.
        std::uint64_t prompt_tokens = 0, cached_prompt_tokens = 0, generated_tokens = 0;
        std::uint64_t image_cache_hits = 0;
    };
    // Thread-safe. A request's counts are in before its on_done runs.
    Stats stats() const;
    // Thread-safe. Forgets what the free slots' KV holds (a new conversation must not reuse an
    // old one's prefix); a slot that is busy keeps its request. Takes effect before the next
    // request is admitted.
    void forget_prefixes();
    // Per-op timings of the session (EngineOptions::profile). Read it only while no request is
    // queued or running (e.g. after the last on_done).
    const graph::Profile& profile() const;
    const model::Model& model() const;

    // Added: the session's settings in effect.
    int slots() const;
    int ctx_size() const;
    Precision precision() const;
    int threads() const;
    kernels::Isa isa() const;

    struct Impl;

  private:
    explicit Engine(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace qvl::runtime
