// The KV arena: one allocation at session start holding keys and values for every layer,
// laid out [layer][k|v][kv_head][pos][head_dim] in f32, so decode attention streams each
// head's keys contiguously. Tracks how many positions are filled and the M-RoPE delta (the
// two differ after an image; confusing them shifts every generated token).
#pragma once

#include <cstdint>
#include <string_view>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "graph/graph.h"

namespace qvl::runtime {

// The one "does it fit the context" rule: `used` positions are filled, `what` needs `n_new`
// more, the arena holds `capacity`. kOutOfRange naming the numbers when used + n_new exceeds
// capacity (no overflow for any inputs), e.g. "the prompt (300 tokens) does not fit the context
// of 256 tokens".
base::Status check_context_fits(std::int64_t used, std::int64_t n_new, std::int64_t capacity,
                                std::string_view what);

class KvCache {
  public:
    // Bytes of the arena create() allocates: 2 (K and V) x n_layers x n_kv_heads x max_ctx x
    // head_dim x sizeof(float). False when that overflows 64 bits.
    static bool bytes_needed(int n_layers, int n_kv_heads, int head_dim, int max_ctx,
                             std::uint64_t* bytes);
    static base::Result<KvCache> create(int n_layers, int n_kv_heads, int head_dim, int max_ctx);

    graph::KvCacheView view();
    int size() const { return size_; }
    int capacity() const { return max_ctx_; }
    std::int64_t rope_delta() const { return rope_delta_; }
    std::int64_t next_rope_position() const { return size_ + rope_delta_; }

    void advance(int n) { size_ += n; }
    void set_rope_delta(std::int64_t d) { rope_delta_ = d; }
    void clear() {
        size_ = 0;
        rope_delta_ = 0;
    }
    std::size_t bytes() const { return buffer_.size(); }

  private:
    base::AlignedBuffer buffer_;
    int n_layers_ = 0, n_kv_heads_ = 0, head_dim_ = 0, max_ctx_ = 0;
    int size_ = 0;
    std::int64_t rope_delta_ = 0;
};

}  // namespace qvl::runtime
