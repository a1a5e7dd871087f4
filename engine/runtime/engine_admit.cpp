// The Engine's step: admission of the request in `admitting` in bounded pieces (its images
// through the vision tower, or from the image-feature cache, then its prompt's prefill chunks),
// then one batched decode step of every generating slot.
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/log.h"
#include "base/timer.h"
#include "runtime/engine_impl.h"

namespace qvl::runtime {

namespace {
using engine_detail::kMinBudgetedPrefillChunk;
constexpr double kUnbounded = std::numeric_limits<double>::infinity();
}  // namespace

// Some sequence other than the one being admitted is generating and has already streamed a
// decode step: its inter-token gap is what a bounded admission protects.
bool Engine::Impl::streaming() const {
    for (int s = 0; s < int(slots.size()); ++s) {
        if (s != admitting && slots[s] != nullptr && slots[s]->pending >= 0 &&
            slots[s]->result.decode_steps > 0) {
            return true;
        }
    }
    return false;
}

void Engine::Impl::step() {
    const bool bounded = options.admission_budget_ms > 0 && streaming();
    if (admitting >= 0) {
        if (bounded) {
            admit_within(options.admission_budget_ms);
        } else {
            admit_piece(kUnbounded);
        }
    }
    // Requests that arrive together (nobody streaming yet) are admitted back to back: the ones
    // already prefilled wait for their first decode step until the rest are in, and then all
    // decode together, instead of decoding in small batches between the others' admissions.
    if (!bounded && !streaming() && (admitting >= 0 || more_waiting)) return;
    decode_step();
}

void Engine::Impl::admit_within(double budget_ms) {
    const double start = base::now_ms(), deadline = start + budget_ms;
    int pieces = 0;
    // Steps far over the budget (one long vision node, the 64-token chunk floor on a slow
    // machine) are worth knowing about when choosing the budget: logged at -v.
    const auto report = [&] {
        const double ms = base::now_ms() - start;
        if (ms > 2 * budget_ms) {
            base::log(base::LogLevel::kInfo,
                      "admission step of {:.0f} ms ({} pieces; prefill {:.1f} ms/token) over a "
                      "{} ms budget",
                      ms, pieces, prefill_ms_per_token, budget_ms);
        }
    };
    admit_piece(budget_ms);
    ++pieces;
    while (admitting >= 0) {
        const double left = deadline - base::now_ms();
        if (left <= 0) return report();
        // Another piece in this step only if it fits what is left: a prefill chunk of at least
        // the floor at the measured rate (unknown rate: not in this step), or vision nodes
        // (they stop at the deadline, overshooting by at most one node).
        const Job& j = *slots[admitting];
        const bool prefill_next = j.next_image >= j.req.prompt.images.size();
        if (prefill_next &&
            (prefill_ms_per_token <= 0 || kMinBudgetedPrefillChunk * prefill_ms_per_token > left)) {
            return report();
        }
        admit_piece(left);
        ++pieces;
    }
    report();
}

// Tokens of the next prefill chunk to fit budget_ms at the measured rate.
int Engine::Impl::prefill_chunk_for(double budget_ms) const {
    if (!std::isfinite(budget_ms)) return kMaxPrefillChunk;
    if (prefill_ms_per_token <= 0) return kMinBudgetedPrefillChunk;  // measures the rate
    const double fit = budget_ms / prefill_ms_per_token;
    return int(std::clamp(fit, double(kMinBudgetedPrefillChunk), double(kMaxPrefillChunk)));
}

// Runs vision tower nodes of j's next image for budget_ms (or restores it from the image
// cache); false when the request ended with an error.
bool Engine::Impl::vision_piece(Job& j, double budget_ms) {
    const int slot = admitting;
    const std::size_t i = j.next_image;
    const base::Timer t;
    base::Status st;
    bool done = false, cached_image = false;
    if (!session->encoding_image()) {  // the image starts
        const std::vector<float>* cached =
            image_cache ? image_cache->find(j.image_hashes[i], j.grids[i]) : nullptr;
        if (cached != nullptr) {
            st =
                session->add_encoded_image(j.grids[i], *cached, j.req.prompt.images[i].video_frame);
            ++j.result.image_cache_hits;
            done = cached_image = true;
        } else {
            if (i == j.kept_images && j.req.on_vision_node) {
                session->set_vision_observer(j.req.on_vision_node);
            }
            st = session->begin_encode_image(j.req.prompt.images[i]);
        }
    }
    if (st.ok() && !cached_image) {
        st = session->encode_image_next(budget_ms, &done);
        if (st.ok() && done && image_cache) {
            const int last = int(i - j.kept_images);  // among the pending images
            image_cache->insert(j.image_hashes[i], j.grids[i], session->image_feature_levels(last));
        }
    }
    j.result.timings.vision += t.elapsed_ms();
    if (done) ++j.next_image;
    if (j.next_image == j.req.prompt.images.size() && j.req.on_vision_node) {
        session->set_vision_observer({});
    }
    if (!st.ok()) {
        finish(slot, "error", st);
        return false;
    }
    return true;
}

void Engine::Impl::admit_piece(double budget_ms) {
    const int slot = admitting;
    Job& j = *slots[slot];
    if (!j.prefill_started && j.result.timings.queue == 0) {
        j.result.timings.queue = base::now_ms() - j.submitted_ms;
        session->clear_images();
    }
    if (j.next_image < j.req.prompt.images.size()) {
        vision_piece(j, budget_ms);
        return;
    }
    const base::Timer t;
    if (!j.prefill_started) {
        if (j.req.after_vision) j.req.after_vision(*session);
        j.prefill_started = true;
        slot_images[std::size_t(slot)] = {};
        // The slot's logits from its prefill on are computed as this request's sampler needs.
        session->expect_sampler(slot, *j.sampler);
        // log-probabilities need the full row: computed in the step, not after a screen
        if (j.req.params.top_logprobs >= 0) session->set_full_logits(slot, true);
        base::Status st;
        if (j.keep > 0) {
            std::vector<model::ImageGrid> kept[2];  // images, video frames
            for (std::size_t i = 0; i < j.kept_images; ++i)
                kept[j.req.prompt.images[i].video_frame ? 1 : 0].push_back(j.grids[i]);
            st = session->begin_prefill_reusing(slot, j.req.prompt.ids, j.keep, kept[0], kept[1]);
        } else {
            session->reset_slot(slot);
            st = session->begin_prefill(slot, j.req.prompt.ids);
        }
        if (!st.ok()) {
            finish(slot, "error", st);
            return;
        }
    }
    bool done = false;
    const int before = session->context_used(slot);
    const base::Timer chunk;
    const base::Status st = session->prefill_next(&done, prefill_chunk_for(budget_ms));
    const double chunk_ms = chunk.elapsed_ms();
    j.result.timings.prefill += t.elapsed_ms();
    if (!st.ok()) {
        finish(slot, "error", st);
        return;
    }
    const int tokens = session->context_used(slot) - before;
    if (tokens >= kMinBudgetedPrefillChunk) {  // short tail chunks say little about the rate
        const double rate = chunk_ms / tokens;
        prefill_ms_per_token =
            prefill_ms_per_token > 0 ? 0.5 * (prefill_ms_per_token + rate) : rate;
    }
    if (done) {
        admitting = -1;
        slot_images[std::size_t(slot)] = {j.image_hashes, j.grids};
        if (j.req.after_prefill) j.req.after_prefill(*session, slot);
        fork_siblings(slot);
        // The repetition penalty counts the prompt's ids (from penalty_from, checked at submit).
        j.sampler->begin(
            std::span<const std::int32_t>(j.req.prompt.ids).subspan(j.req.penalty_from));
        if (j.req.params.n_predict <= 0) {
            finish(slot, "length");
        } else {
            take_token(slot);
        }
    }
}

void Engine::Impl::fork_siblings(int from) {
    const RequestId leader = slots[from]->id;
    std::vector<std::pair<int, std::unique_ptr<Job>>> forks;
    {
        const std::lock_guard<std::mutex> lock(mu);
        int next_free = 0;
        for (auto it = queue.begin(); it != queue.end();) {
            if ((*it)->fork_of != leader) {
                ++it;
                continue;
            }
            while (next_free < int(slots.size()) && slots[next_free] != nullptr) ++next_free;
            if (next_free == int(slots.size())) break;
            forks.emplace_back(next_free++, std::move(*it));
            it = queue.erase(it);
            ++busy;
        }
    }
    for (auto& [to, job] : forks) {
        slots[to] = std::move(job);
        start_fork(from, to, *slots[to]);
    }
}

// j (in slot `to`) starts where slot `from`'s prefill left off: a copy of its KV and logits.
void Engine::Impl::start_fork(int from, int to, Job& j) {
    session->fork_slot(from, to);
    slot_images[std::size_t(to)] = slot_images[std::size_t(from)];
    j.prefill_started = true;
    j.next_image = j.kept_images = j.req.prompt.images.size();
    j.result.timings.queue = base::now_ms() - j.submitted_ms;
    j.result.cached_prompt_tokens = int(j.req.prompt.ids.size());
    session->expect_sampler(to, *j.sampler);
    if (j.req.params.top_logprobs >= 0) session->set_full_logits(to, true);
    if (j.req.after_prefill) j.req.after_prefill(*session, to);
    j.sampler->begin(std::span<const std::int32_t>(j.req.prompt.ids).subspan(j.req.penalty_from));
    if (j.req.params.n_predict <= 0) {
        finish(to, "length");
    } else {
        take_token(to);
    }
}

void Engine::Impl::decode_step() {
    batch_slots.clear();
    batch_tokens.clear();
    for (int s = 0; s < int(slots.size()); ++s) {
        if (slots[s] != nullptr && s != admitting && slots[s]->pending >= 0) {
            batch_slots.push_back(s);
            batch_tokens.push_back(slots[s]->pending);
        }
    }
    if (batch_slots.empty()) return;
    const base::Status st = session->decode_batch(batch_slots, batch_tokens);
    for (int s : batch_slots) {
        if (slots[s] == nullptr) continue;  // finished by a callback's cancel? (not possible)
        slots[s]->pending = -1;
        ++slots[s]->result.decode_steps;
        if (!st.ok()) {
            finish(s, "error", st);
        } else {
            take_token(s);
        }
    }
}

}  // namespace qvl::runtime
