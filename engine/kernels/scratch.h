// Per-thread kernel scratch: packed GEMM panels, accumulator slabs, attention tiles. Each pool
// thread owns one buffer per slot that grows and is reused, so steady-state calls do not
// allocate. Which thread runs which task is decided at run time, though, so a thread may meet
// a size only another thread has needed so far; reserve_thread_scratch() lets every thread
// catch up to the largest sizes seen (graph::Executor does so after a run that grew anything).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::kernels {

// Changes whenever some thread grows a slot beyond the largest size any thread asked for.
std::uint64_t scratch_generation();

// How many scratch buffers all threads have allocated so far (tests: a decode step adds none).
std::uint64_t scratch_allocations();

// Grows the calling thread's buffers to the largest size asked of each slot by any thread.
void reserve_thread_scratch();

namespace detail {

enum ScratchSlot {
    kScratchA = 0,
    kScratchB = 1,
    kScratchB2 = 2,
    kScratchC = 3,
    kScratchC2 = 4,
    kScratchGather = 5,
    kScratchEpilogue = 6,       // a row for epilogues that need one
    kScratchAttention = 7,      // the flash driver's tiles (x86/attention_flash.h)
    kScratchAttentionKV = 8,    // a task's keys and values, repacked for its tiles
    kScratchQ8Corrections = 9,  // the int8 VNNI kernel's per-panel weight sums
    kScratchQ8WideA = 10,       // int8 activations widened to f32 for the FMA kernel
    kScratchQ8WideW = 11,       // int8 weights widened to f32 for the FMA kernel
    kScratchSlots = 12
};

// The calling thread's buffer for slot, at least bytes long and 64-byte aligned; valid until
// the next call with the same slot on the same thread. Aborts if memory is exhausted.
void* thread_scratch(ScratchSlot slot, std::size_t bytes);

}  // namespace detail
}  // namespace qvl::kernels
