#include "base/thread_pool.h"

#include <pthread.h>
#include <sched.h>

namespace qvl::base {
namespace {

// About 50-100 microseconds of spinning before sleeping: long enough to bridge the gap
// between the ops of one forward pass, short enough not to starve other processes.
constexpr int kSpinIterations = 20000;

inline void cpu_relax() { __builtin_ia32_pause(); }

void pin_to_cpu(std::thread::native_handle_type handle, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(handle, sizeof set, &set);  // best effort
}

}  // namespace

ThreadPool::ThreadPool(int n_threads, bool pin) {
    if (n_threads < 1) n_threads = 1;
    workers_.reserve(n_threads - 1);
    for (int i = 1; i < n_threads; ++i) {
        workers_.emplace_back([this, i] { worker_loop(i); });
        if (pin) pin_to_cpu(workers_.back().native_handle(), i);
    }
    if (pin) pin_to_cpu(pthread_self(), 0);
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    for (auto& w : workers_) w.join();
}

void ThreadPool::drain_tasks() {
    for (;;) {
        const int task = next_task_.fetch_add(1, std::memory_order_relaxed);
        if (task >= job_tasks_) return;
        job_fn_(job_ctx_, task);
    }
}

void ThreadPool::run(int n_tasks, TaskFn fn, void* ctx) {
    job_fn_ = fn;
    job_ctx_ = ctx;
    job_tasks_ = n_tasks;
    next_task_.store(0, std::memory_order_relaxed);
    workers_done_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    drain_tasks();
    const int n_workers = int(workers_.size());
    for (int spin = 0; workers_done_.load(std::memory_order_acquire) != n_workers; ++spin) {
        if (spin < kSpinIterations) {
            cpu_relax();
        } else {
            std::this_thread::yield();
        }
    }
}

void ThreadPool::worker_loop(int /*index*/) {
    // Generation 0 is the state before the first job: a worker that starts late still sees
    // every job, because the caller waits for all workers before posting the next one.
    unsigned seen = 0;
    for (;;) {
        unsigned g = seen;
        for (int spin = 0; spin < kSpinIterations; ++spin) {
            g = generation_.load(std::memory_order_acquire);
            if (g != seen) break;
            cpu_relax();
        }
        while (g == seen) {
            generation_.wait(seen, std::memory_order_acquire);
            g = generation_.load(std::memory_order_acquire);
        }
        seen = g;
        if (stop_.load(std::memory_order_acquire)) return;
        drain_tasks();
        workers_done_.fetch_add(1, std::memory_order_acq_rel);
    }
}

}  // namespace qvl::base
