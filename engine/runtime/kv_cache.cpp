#include "runtime/kv_cache.h"

#include "base/checked_math.h"

namespace qvl::runtime {

base::Status check_context_fits(std::int64_t used, std::int64_t n_new, std::int64_t capacity,
                                std::string_view what) {
    if (used >= 0 && n_new >= 0 && n_new <= capacity - used) return base::Status();
    if (used > 0) {
        return base::error(base::ErrorCode::kOutOfRange,
                           "{} ({} tokens) does not fit the context of {} tokens ({} already used)",
                           what, n_new, capacity, used);
    }
    return base::error(base::ErrorCode::kOutOfRange,
                       "{} ({} tokens) does not fit the context of {} tokens", what, n_new,
                       capacity);
}

bool KvCache::bytes_needed(int n_layers, int n_kv_heads, int head_dim, int max_ctx,
                           std::uint64_t* bytes) {
    return n_layers >= 0 && n_kv_heads >= 0 && head_dim >= 0 && max_ctx >= 0 &&
           base::checked_product({2, std::uint64_t(n_layers), std::uint64_t(n_kv_heads),
                                  std::uint64_t(max_ctx), std::uint64_t(head_dim), sizeof(float)},
                                 bytes);
}

base::Result<KvCache> KvCache::create(int n_layers, int n_kv_heads, int head_dim, int max_ctx) {
    std::uint64_t bytes = 0;
    if (!bytes_needed(n_layers, n_kv_heads, head_dim, max_ctx, &bytes)) {
        return base::error(base::ErrorCode::kResourceExhausted,
                           "kv cache for {} tokens overflows the address space", max_ctx);
    }
    KvCache kv;
    QVL_ASSIGN_OR_RETURN(kv.buffer_,
                         base::AlignedBuffer::allocate(std::size_t(bytes), "kv cache", false));
    kv.n_layers_ = n_layers;
    kv.n_kv_heads_ = n_kv_heads;
    kv.head_dim_ = head_dim;
    kv.max_ctx_ = max_ctx;
    return kv;
}

graph::KvCacheView KvCache::view() {
    const std::ptrdiff_t head_stride = std::ptrdiff_t(max_ctx_) * head_dim_;
    return {.base = buffer_.as<float>(),
            .layer_stride = 2 * head_stride * n_kv_heads_,
            .head_stride = head_stride};
}

}  // namespace qvl::runtime
