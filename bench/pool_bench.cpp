// The thread pool's own costs, for the scaling simulator (bench/scaling.py): counter `us` per
// job.
//   pool/fork_join/threads=T   back-to-back jobs of T empty tasks (workers still spinning)
//   pool/wake/threads=T        a job after 300 us of idleness (workers asleep on the futex)
//   pool/notify/waiters=N      the waker's cost of one notify_all with N threads asleep on the
//                              atomic, per woken thread (the part of a wake-up that grows with T)
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/thread_pool.h"
#include "base/timer.h"

namespace qvl {
namespace {

void pool_fork_join(benchmark::State& state) {
    const int threads = int(state.range(0));
    base::ThreadPool pool(threads);
    std::atomic<int> sink{0};
    const double t0 = base::now_ms();
    for (auto _ : state) {
        pool.parallel_for(threads, [&](int t) { sink.fetch_add(t, std::memory_order_relaxed); });
    }
    state.counters["us"] = 1000.0 * (base::now_ms() - t0) / double(state.iterations());
}

void pool_wake(benchmark::State& state) {
    const int threads = int(state.range(0));
    base::ThreadPool pool(threads);
    std::atomic<int> sink{0};
    double total_ms = 0;
    for (auto _ : state) {
        state.PauseTiming();
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        state.ResumeTiming();
        const double t0 = base::now_ms();
        pool.parallel_for(threads, [&](int t) { sink.fetch_add(t, std::memory_order_relaxed); });
        total_ms += base::now_ms() - t0;
    }
    state.counters["us"] = 1000.0 * total_ms / double(state.iterations());
}

void pool_notify(benchmark::State& state) {
    const int waiters = int(state.range(0));
    std::atomic<unsigned> gen{0};
    std::atomic<int> asleep{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < waiters; ++i) {
        threads.emplace_back([&] {
            for (unsigned seen = 0; !stop.load();) {
                asleep.fetch_add(1);
                gen.wait(seen);
                seen = gen.load();
            }
        });
    }
    double total_ms = 0;
    for (auto _ : state) {
        state.PauseTiming();
        while (asleep.load() < waiters) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // all in the futex
        asleep.store(0);
        state.ResumeTiming();
        const double t0 = base::now_ms();
        gen.fetch_add(1);
        gen.notify_all();
        total_ms += base::now_ms() - t0;
    }
    stop.store(true);
    gen.fetch_add(1);
    gen.notify_all();
    for (auto& t : threads) t.join();
    state.counters["us"] = 1000.0 * total_ms / double(state.iterations());
    state.counters["us_per_waiter"] = state.counters["us"] / waiters;
}

BENCHMARK(pool_fork_join)->Name("pool/fork_join")->ArgName("threads")->Arg(2)->UseRealTime();
BENCHMARK(pool_wake)->Name("pool/wake")->ArgName("threads")->Arg(2)->UseRealTime()->Iterations(300);
BENCHMARK(pool_notify)
    ->Name("pool/notify")
    ->ArgName("waiters")
    ->Arg(1)
    ->Arg(8)
    ->Arg(32)
    ->UseRealTime()
    ->Iterations(100);

}  // namespace
}  // namespace qvl
