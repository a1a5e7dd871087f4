// Per-thread kernel scratch (kernels/scratch.h): a size one thread needed can be reserved on
// every other thread, after which no thread allocates for it.
#include "kernels/scratch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

namespace qvl::kernels {
namespace {

using detail::kScratchGather;
using detail::thread_scratch;

TEST(ThreadScratch, ReserveLevelsThisThreadToSizesOtherThreadsNeeded) {
    // A size larger than any other test in this binary asks for, so the marks must rise.
    constexpr std::size_t kBytes = std::size_t(48) << 20;
    const std::uint64_t generation = scratch_generation();
    std::thread([] {
        void* p = thread_scratch(kScratchGather, kBytes);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0U);
    }).join();
    EXPECT_NE(scratch_generation(), generation) << "a new largest size must be announced";

    std::uint64_t allocations = scratch_allocations();
    reserve_thread_scratch();
    EXPECT_GT(scratch_allocations(), allocations) << "this thread never held that size";
    allocations = scratch_allocations();
    const std::uint64_t levelled = scratch_generation();
    auto* bytes = static_cast<unsigned char*>(thread_scratch(kScratchGather, kBytes));
    bytes[0] = 1, bytes[kBytes - 1] = 2;  // the whole size is usable (ASan checks)
    EXPECT_EQ(scratch_allocations(), allocations);
    EXPECT_EQ(scratch_generation(), levelled) << "no new size: nothing to announce";
    reserve_thread_scratch();
    EXPECT_EQ(scratch_allocations(), allocations) << "already level: nothing to allocate";
}

TEST(ThreadScratch, SmallerRequestsReuseTheBuffer) {
    void* big = thread_scratch(detail::kScratchEpilogue, 4096);
    const std::uint64_t allocations = scratch_allocations();
    EXPECT_EQ(thread_scratch(detail::kScratchEpilogue, 100), big);
    EXPECT_EQ(thread_scratch(detail::kScratchEpilogue, 4096), big);
    EXPECT_EQ(scratch_allocations(), allocations);
}

}  // namespace
}  // namespace qvl::kernels
