#include "kernels/scratch.h"

#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cstdlib>

#include "base/check.h"

namespace qvl::kernels {
namespace {

struct Buffer {
    void* data = nullptr;
    std::size_t size = 0;
    Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { std::free(data); }
};

// The largest size asked of each slot by any thread, and a counter bumped when one rises.
std::array<std::atomic<std::size_t>, detail::kScratchSlots> g_high_water{};
std::atomic<std::uint64_t> g_generation{0};
std::atomic<std::uint64_t> g_allocations{0};

void raise_high_water(detail::ScratchSlot slot, std::size_t bytes) {
    std::size_t seen = g_high_water[slot].load(std::memory_order_relaxed);
    while (bytes > seen) {
        if (g_high_water[slot].compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
            g_generation.fetch_add(1, std::memory_order_release);
            return;
        }
    }
}

std::array<Buffer, detail::kScratchSlots>& thread_buffers() {
    thread_local std::array<Buffer, detail::kScratchSlots> buffers;
    return buffers;
}

void* grow(Buffer& b, std::size_t bytes) {
    if (b.size >= bytes) return b.data;
    // Grow with headroom so that a sequence of slightly growing shapes settles quickly. Large
    // packed panels are swept many times: back them with transparent huge pages (2 MiB
    // aligned, madvise) so the sweeps do not miss the TLB every 4 KiB.
    constexpr std::size_t kHuge = std::size_t(2) << 20;
    const std::size_t want = bytes + bytes / 4;
    const std::size_t align = want >= kHuge ? kHuge : 64;
    const std::size_t size = (want + align - 1) / align * align;
    std::free(b.data);
    b.data = std::aligned_alloc(align, size);
    QVL_CHECK(b.data != nullptr, "kernel scratch: out of memory");
    b.size = size;
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (align == kHuge) madvise(b.data, size, MADV_HUGEPAGE);
    return b.data;
}

}  // namespace

std::uint64_t scratch_generation() { return g_generation.load(std::memory_order_acquire); }

std::uint64_t scratch_allocations() { return g_allocations.load(std::memory_order_relaxed); }

void reserve_thread_scratch() {
    auto& buffers = thread_buffers();
    for (int s = 0; s < detail::kScratchSlots; ++s) {
        const std::size_t bytes = g_high_water[s].load(std::memory_order_relaxed);
        if (bytes > 0) grow(buffers[s], bytes);
    }
}

namespace detail {

void* thread_scratch(ScratchSlot slot, std::size_t bytes) {
    Buffer& b = thread_buffers()[slot];
    if (b.size >= bytes) return b.data;
    raise_high_water(slot, bytes);
    return grow(b, bytes);
}

}  // namespace detail
}  // namespace qvl::kernels
