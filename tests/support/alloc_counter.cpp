#include "support/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::int64_t> g_allocations{0};
std::atomic<int> g_active{0};

void* counted_alloc(std::size_t size) {
    if (g_active.load(std::memory_order_relaxed) > 0) g_allocations.fetch_add(1);
    void* p = std::malloc(size ? size : 1);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}
}  // namespace

void* operator new(std::size_t size) { return counted_alloc(size); }
void* operator new[](std::size_t size) { return counted_alloc(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace qvl::test {

AllocationCounter::AllocationCounter() : start_(g_allocations.load()) { g_active.fetch_add(1); }
AllocationCounter::~AllocationCounter() { g_active.fetch_sub(1); }
std::int64_t AllocationCounter::allocations() const { return g_allocations.load() - start_; }

}  // namespace qvl::test
