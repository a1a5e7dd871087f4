#include "runtime/kv_cache.h"

#include "base/checked_math.h"

namespace qvl::runtime {

base::Result<KvCache> KvCache::create(int n_layers, int n_kv_heads, int head_dim, int max_ctx) {
    std::uint64_t bytes = 0;
    if (!base::checked_product({std::uint64_t(n_layers), 2, std::uint64_t(n_kv_heads),
                                std::uint64_t(max_ctx), std::uint64_t(head_dim), sizeof(float)},
                               &bytes)) {
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
