#include "base/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>

#include "base/cpu_budget.h"
#include "base/timer.h"

namespace qvl::base {
namespace {

// About 50 microseconds of spinning before yielding or sleeping: long enough to bridge the gap
// between the ops of one forward pass, short enough not to starve other processes (or this
// pool's other thread when the machine is oversubscribed and both share a core). Measured by
// the clock: `pause` takes ~140 cycles on Intel cores since Skylake and a few dozen on AMD's, so
// a fixed count of 20000 meant ~1 ms of spinning per wait on the Xeon (5 % of a whole run's
// samples in the pool's spin loops) but ~0.1-0.3 ms on Zen.
constexpr auto kSpinTime = std::chrono::microseconds(50);

inline void cpu_relax() { __builtin_ia32_pause(); }

// True while the spin budget lasts; reads the clock once every 64 calls.
class SpinBudget {
  public:
    SpinBudget() : deadline_(std::chrono::steady_clock::now() + kSpinTime) {}
    bool spin() {
        if (!spinning_) return false;
        cpu_relax();
        if ((++count_ & 63) == 0 && std::chrono::steady_clock::now() >= deadline_) {
            spinning_ = false;
        }
        return true;
    }

  private:
    std::chrono::steady_clock::time_point deadline_;
    unsigned count_ = 0;
    bool spinning_ = true;
};

void pin_to_cpu(std::thread::native_handle_type handle, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(handle, sizeof set, &set);  // best effort
}

}  // namespace

double ThreadPool::trace_now_ms() { return now_ms(); }

ThreadPool::ThreadPool(int n_threads, bool pin) {
    if (n_threads < 1) n_threads = 1;
    workers_.reserve(n_threads - 1);
    // Pinned threads go to the CPUs this process may use (taskset, cpuset), not CPUs 0..n-1.
    const std::vector<int> cpus = pin ? allowed_cpus() : std::vector<int>{0};
    for (int i = 1; i < n_threads; ++i) {
        workers_.emplace_back([this, i] { worker_loop(i); });
        if (pin) pin_to_cpu(workers_.back().native_handle(), cpus[std::size_t(i) % cpus.size()]);
    }
    if (pin) pin_to_cpu(pthread_self(), cpus[0]);
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
    SpinBudget budget;
    while (workers_done_.load(std::memory_order_acquire) != n_workers) {
        if (!budget.spin()) std::this_thread::yield();
    }
}

void ThreadPool::worker_loop(int /*index*/) {
    // Generation 0 is the state before the first job: a worker that starts late still sees
    // every job, because the caller waits for all workers before posting the next one.
    unsigned seen = 0;
    for (;;) {
        unsigned g = generation_.load(std::memory_order_acquire);
        for (SpinBudget budget; g == seen && budget.spin();) {
            g = generation_.load(std::memory_order_acquire);
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
