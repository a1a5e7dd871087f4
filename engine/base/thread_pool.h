// A fixed pool of worker threads for data-parallel loops. The calling thread takes part, so a
// pool of size 1 runs everything inline. Workers spin briefly for the next job, then sleep on a
// futex (the machine is shared: a spinning pool loses badly when another process wants a core).
//
// parallel_for hands out task indices dynamically; callers make each task's result depend only
// on its index (never on the thread that ran it), so results are identical for any pool size.
// No allocation per call.
#pragma once

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "base/task_trace.h"

namespace qvl::base {

class ThreadPool {
  public:
    // n_threads >= 1 counts the caller. pin: bind thread i to logical CPU i.
    explicit ThreadPool(int n_threads, bool pin = false);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return int(workers_.size()) + 1; }

    // Runs fn(task) for task in [0, n_tasks), spread over the pool; returns when all are done.
    // fn must not throw. Not re-entrant: do not call parallel_for from inside fn.
    template <class Fn>
    void parallel_for(int n_tasks, Fn&& fn) {
        if (n_tasks <= 0) return;
        if (TaskTrace* trace = TaskTrace::active(); trace != nullptr) [[unlikely]] {
            return parallel_for_traced(n_tasks, fn, trace);
        }
        parallel_for_untraced(n_tasks, fn);
    }

    // Runs fn(i) exactly once on every thread of the pool (the caller included), i in
    // [0, size()): for per-thread state such as kernel scratch. fn must not throw.
    template <class Fn>
    void run_on_each_thread(Fn&& fn) {
        if (workers_.empty()) {
            fn(0);
            return;
        }
        // Every task waits until all size() tasks are taken. A thread holds one task at a time,
        // so the tasks are held by size() different threads: each thread runs exactly one.
        std::atomic<int> arrived{0};
        const int n = size();
        parallel_for(n, [&](int task) {
            arrived.fetch_add(1, std::memory_order_acq_rel);
            while (arrived.load(std::memory_order_acquire) < n) std::this_thread::yield();
            fn(task);
        });
    }

  private:
    template <class Fn>
    void parallel_for_untraced(int n_tasks, Fn&& fn) {
        if (n_tasks == 1 || workers_.empty()) {
            for (int t = 0; t < n_tasks; ++t) fn(t);
            return;
        }
        run(n_tasks, &trampoline<std::remove_reference_t<Fn>>, &fn);
    }

    // QVL_TASK_TRACE: the same job, each task timed (base/task_trace.h).
    template <class Fn>
    void parallel_for_traced(int n_tasks, Fn& fn, TaskTrace* trace) {
        std::vector<float> task_us(std::size_t(n_tasks), 0.f);
        const double t0 = trace_now_ms();
        parallel_for_untraced(n_tasks, [&](int t) {
            const double s = trace_now_ms();
            fn(t);
            task_us[std::size_t(t)] = float(1000.0 * (trace_now_ms() - s));
        });
        trace->record_region(size(), t0, trace_now_ms(), task_us);
    }
    static double trace_now_ms();

    using TaskFn = void (*)(void* ctx, int task);
    template <class Fn>
    static void trampoline(void* ctx, int task) {
        (*static_cast<Fn*>(ctx))(task);
    }

    void run(int n_tasks, TaskFn fn, void* ctx);
    void worker_loop(int index);
    void drain_tasks();

    std::vector<std::thread> workers_;
    TaskFn job_fn_ = nullptr;
    void* job_ctx_ = nullptr;
    int job_tasks_ = 0;
    std::atomic<int> next_task_{0};
    std::atomic<unsigned> generation_{0};
    std::atomic<int> workers_done_{0};
    std::atomic<bool> stop_{false};
};

}  // namespace qvl::base
