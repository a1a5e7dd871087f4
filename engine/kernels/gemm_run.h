// Runs one GEMM on a thread pool the way kernels/gemm.h recommends: when its split has several
// column tasks over the same rows, A is packed once, by all threads, into a buffer every task
// reads (instead of once per task), then the tasks run. The results are the same bits either
// way; the buffer grows to the largest A seen (capped: above kMaxSharedBytes each task packs its
// own, as before).
#pragma once

#include <cstddef>
#include <utility>

#include "base/aligned_buffer.h"
#include "kernels/gemm.h"
#include "kernels/kernel_table.h"
#include "kernels/task_work.h"

namespace qvl::kernels {

class GemmRunner {
  public:
    // 8 MiB, the A a task packs per pass (x86/gemm_driver.h): every GEMM of a 448x448 prefill
    // and the 1024-wide vision products of a 448x448 image. Larger A is slower shared (one more
    // pass over it through the L3: bench/README.md), so tasks pack their own there.
    static constexpr std::size_t kMaxSharedBytes = std::size_t(8) << 20;

    // Pool: anything with size() and parallel_for(n, fn), such as base::ThreadPool.
    template <class Pool>
    void run(const KernelTable& table, GemmArgs args, Pool& pool) {
        const int nt = gemm_num_tasks(args, pool.size());
        const std::size_t bytes = table.gemm_shared_a_bytes(args, nt);
        if (bytes > 0 && bytes <= kMaxSharedBytes && reserve(bytes)) {
            args.packed_a = shared_a_.data();
            const int np = gemm_pack_a_num_tasks(args, pool.size());
            trace_gemm_pack_a(args);
            pool.parallel_for(np, [&](int t) { table.gemm_pack_a_task(args, t, np); });
        }
        trace_gemm(table, args);
        pool.parallel_for(nt, [&](int t) { table.gemm_task(args, t, nt); });
    }

  private:
    // False (and the tasks pack their own A) when the memory cannot be had.
    bool reserve(std::size_t bytes) {
        if (shared_a_.size() >= bytes) return true;
        shared_a_ = base::AlignedBuffer();  // free the smaller one first
        auto grown = base::AlignedBuffer::allocate(bytes, "shared GEMM A panels", false);
        if (!grown.ok()) return false;
        shared_a_ = std::move(grown.value());
        return true;
    }

    base::AlignedBuffer shared_a_;
};

}  // namespace qvl::kernels
