// The KV arena: one allocation at session start holding keys and values for every slot (one
// sequence each) and every layer, laid out [slot][layer][k|v][kv_head][pos][head_dim] in f32 or
// bf16 (the session chooses: runtime/session.h session_kv_type; bf16 halves the bytes and what
// decode attention reads), so decode attention streams each head's keys contiguously and a
// slot's region never moves. Tracks per slot how many positions are filled and the M-RoPE delta
// (the two differ after an image; confusing them shifts every generated token). The slot
// argument defaults to 0, the only slot of a single-conversation cache.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "graph/graph.h"
#include "kernels/attention.h"

namespace qvl::runtime {

// The one "does it fit the context" rule: `used` positions are filled, `what` needs `n_new`
// more, the arena holds `capacity`. kOutOfRange naming the numbers when used + n_new exceeds
// capacity (no overflow for any inputs), e.g. "the prompt (300 tokens) does not fit the context
// of 256 tokens".
base::Status check_context_fits(std::int64_t used, std::int64_t n_new, std::int64_t capacity,
                                std::string_view what);

class KvCache {
  public:
    static base::Result<KvCache> create(int n_layers, int n_kv_heads, int head_dim, int max_ctx,
                                        int n_slots = 1,
                                        kernels::KvType type = kernels::KvType::kF32);
    // Bytes an arena of these dimensions and element type takes; false when the product
    // overflows.
    static bool arena_bytes(int n_layers, int n_kv_heads, int head_dim, int max_ctx, int n_slots,
                            kernels::KvType type, std::uint64_t* bytes);

    graph::KvCacheView view(int slot = 0);
    // Maps the arena pages positions [pos0, pos0 + n) of `slot` will be written to, in every
    // layer and head, before a prefill chunk writes them (base::AlignedBuffer::populate: one
    // call per region instead of a page fault per 4 KiB, ~70 ms of a 212-token prefill here).
    // The regions (one per layer, K or V, and head) split into `parts` shares of which this call
    // maps share `part`, so that threads can map a chunk's pages together: first touches cost
    // 1-40 µs per page on this project's VMs, and two threads took 41-123 ms where one took
    // 36-250 ms for a 212-token prefill. Mapping the first 1024 positions when the session is
    // created instead took ~60 ms off a first 448x448 prefill and added ~100 ms to the vision
    // tower before it (its arena's first touches got slower): on these VMs the cost goes with
    // fresh memory, not with the phase, so it stays here, where only used pages are mapped.
    void populate(int slot, int pos0, int n, int part = 0, int parts = 1);
    int slots() const { return int(slots_.size()); }
    int size(int slot = 0) const { return slots_[slot].size; }
    int capacity() const { return max_ctx_; }
    std::int64_t rope_delta(int slot = 0) const { return slots_[slot].rope_delta; }
    std::int64_t next_rope_position(int slot = 0) const {
        return slots_[slot].size + slots_[slot].rope_delta;
    }

    void advance(int n, int slot = 0) { slots_[slot].size += n; }
    void set_rope_delta(std::int64_t d, int slot = 0) { slots_[slot].rope_delta = d; }
    // Makes slot `to` hold what slot `from` holds (its positions and rope delta): n choices of
    // one prompt share its prefill (Session::fork_slot).
    void copy_slot(int from, int to);
    // Keeps the first n positions (prefix reuse); the rope delta is the caller's to set.
    void truncate(int n, int slot = 0) { slots_[slot].size = n; }
    void clear(int slot = 0) {
        slots_[slot].size = 0;
        slots_[slot].rope_delta = 0;
    }
    std::size_t bytes() const { return buffer_.size(); }
    kernels::KvType type() const { return type_; }

  private:
    struct Slot {
        int size = 0;
        std::int64_t rope_delta = 0;
    };
    base::AlignedBuffer buffer_;
    int n_layers_ = 0, n_kv_heads_ = 0, head_dim_ = 0, max_ctx_ = 0;
    kernels::KvType type_ = kernels::KvType::kF32;
    std::vector<Slot> slots_;
};

}  // namespace qvl::runtime
