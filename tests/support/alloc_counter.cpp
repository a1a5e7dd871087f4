#include "support/alloc_counter.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

// Every form of the global operator new and delete is replaced (plain, array, nothrow,
// aligned), all on malloc/aligned_alloc + free, so that every allocation is counted and
// AddressSanitizer sees matching allocate/free pairs.
namespace {
std::atomic<std::int64_t> g_allocations{0};
std::atomic<int> g_active{0};

void* counted_alloc(std::size_t size, std::size_t align) {
    if (g_active.load(std::memory_order_relaxed) > 0) g_allocations.fetch_add(1);
    if (size == 0) size = 1;
    if (align <= alignof(std::max_align_t)) return std::malloc(size);
    return std::aligned_alloc(align, (size + align - 1) / align * align);
}

void* throwing_alloc(std::size_t size, std::size_t align) {
    void* p = counted_alloc(size, align);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}
}  // namespace

void* operator new(std::size_t n) { return throwing_alloc(n, 0); }
void* operator new[](std::size_t n) { return throwing_alloc(n, 0); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return throwing_alloc(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a) {
    return throwing_alloc(n, std::size_t(a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return counted_alloc(n, std::size_t(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return counted_alloc(n, std::size_t(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace qvl::test {

AllocationCounter::AllocationCounter() : start_(g_allocations.load()) { g_active.fetch_add(1); }
AllocationCounter::~AllocationCounter() { g_active.fetch_sub(1); }
std::int64_t AllocationCounter::allocations() const { return g_allocations.load() - start_; }

}  // namespace qvl::test
