#include "runtime/kv_cache.h"

#include <algorithm>
#include <cstring>

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

bool KvCache::arena_bytes(int n_layers, int n_kv_heads, int head_dim, int max_ctx, int n_slots,
                          kernels::KvType type, std::uint64_t* bytes) {
    return n_layers >= 0 && n_kv_heads >= 0 && head_dim >= 0 && max_ctx >= 0 && n_slots >= 0 &&
           base::checked_product(
               {std::uint64_t(n_slots), std::uint64_t(n_layers), 2, std::uint64_t(n_kv_heads),
                std::uint64_t(max_ctx), std::uint64_t(head_dim), kernels::kv_type_bytes(type)},
               bytes);
}

base::Result<KvCache> KvCache::create(int n_layers, int n_kv_heads, int head_dim, int max_ctx,
                                      int n_slots, kernels::KvType type) {
    if (n_slots < 1) {
        return base::error(base::ErrorCode::kInvalidArgument, "kv cache needs at least one slot");
    }
    std::uint64_t bytes = 0;
    if (!arena_bytes(n_layers, n_kv_heads, head_dim, max_ctx, n_slots, type, &bytes)) {
        return base::error(base::ErrorCode::kResourceExhausted,
                           "kv cache for {} slots of {} tokens overflows the address space",
                           n_slots, max_ctx);
    }
    KvCache kv;
    QVL_ASSIGN_OR_RETURN(kv.buffer_,
                         base::AlignedBuffer::allocate(std::size_t(bytes), "kv cache", false));
    kv.n_layers_ = n_layers;
    kv.n_kv_heads_ = n_kv_heads;
    kv.head_dim_ = head_dim;
    kv.max_ctx_ = max_ctx;
    kv.type_ = type;
    kv.slots_.resize(std::size_t(n_slots));
    return kv;
}

graph::KvCacheView KvCache::view(int slot) {
    const std::ptrdiff_t head_stride = std::ptrdiff_t(max_ctx_) * head_dim_;
    const std::ptrdiff_t layer_stride = 2 * head_stride * n_kv_heads_;
    const auto elem = std::ptrdiff_t(kernels::kv_type_bytes(type_));
    return {
        .base = buffer_.as<std::byte>() + std::ptrdiff_t(slot) * layer_stride * n_layers_ * elem,
        .layer_stride = layer_stride,
        .head_stride = head_stride,
        .type = type_};
}

void KvCache::copy_slot(int from, int to) {
    if (from == to || from < 0 || to < 0 || from >= slots() || to >= slots()) return;
    const auto elem = std::size_t(kernels::kv_type_bytes(type_));
    const std::size_t row = std::size_t(head_dim_) * elem;
    const std::size_t region = std::size_t(max_ctx_) * row;  // one head's K or V
    const std::size_t regions_per_slot = std::size_t(n_layers_) * 2 * n_kv_heads_;
    const std::size_t used = std::size_t(slots_[std::size_t(from)].size) * row;
    std::byte* base = buffer_.as<std::byte>();
    for (std::size_t r = 0; r < regions_per_slot; ++r) {
        std::memcpy(base + (std::size_t(to) * regions_per_slot + r) * region,
                    base + (std::size_t(from) * regions_per_slot + r) * region, used);
    }
    slots_[std::size_t(to)] = slots_[std::size_t(from)];
}

void KvCache::populate(int slot, int pos0, int n, int part, int parts) {
    n = std::min(n, max_ctx_ - pos0);
    if (slot < 0 || slot >= slots() || pos0 < 0 || n <= 0 || parts < 1 || part < 0 ||
        part >= parts) {
        return;
    }
    const auto elem = std::size_t(kernels::kv_type_bytes(type_));
    const std::size_t row = std::size_t(head_dim_) * elem;
    const std::size_t region = std::size_t(max_ctx_) * row;  // one head's K or V
    const std::size_t regions_per_slot = std::size_t(n_layers_) * 2 * n_kv_heads_;
    const std::size_t r0 = regions_per_slot * std::size_t(part) / std::size_t(parts);
    const std::size_t r1 = regions_per_slot * std::size_t(part + 1) / std::size_t(parts);
    for (std::size_t r = r0; r < r1; ++r) {
        const std::size_t at = (std::size_t(slot) * regions_per_slot + r) * region;
        buffer_.populate(at + std::size_t(pos0) * row, std::size_t(n) * row);
    }
}

}  // namespace qvl::runtime
