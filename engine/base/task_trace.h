// QVL_TASK_TRACE=FILE: a record of every parallel region a run executes, for the scaling
// simulator (bench/scaling.py). Each thread-pool job is written with its node, its tasks'
// measured times, and the work of its tasks as the same split code would cut it for other thread
// counts (QVL_TASK_TRACE_THREADS, default 1,2,4,8,16,32,64), so a 2-core machine can replay a
// request for 64 threads. Off (the variable unset) the only cost is one predictable branch per
// parallel_for and per node.
//
// The file is JSON lines, written when the process exits (nothing is written during the run, so
// the run's timing is not disturbed by I/O):
//   {"ev":"run","phase":"vision"|"prefill"|"decode","t":ms}         a graph run begins
//   {"ev":"node","name":"text.layers.3.qkv","op":"matmul","t0":ms,"t1":ms}   a node ended
//   {"ev":"region","node":NAME,"sig":S,"threads":T,"t0":ms,"t1":ms,"us":[task times]}
//   {"ev":"part","sig":S,"parts":{"1":[[count,flops,weight,kv,act],...],...}}   once per sig
//   {"ev":"mark","what":"submit"|"first_token","id":N,"t":ms}
// Times are base::now_ms(). A region's tasks are its parallel_for's indices in order; "parts"
// lists, per thread count, the tasks in index order, run-length encoded (count identical tasks),
// with their work: FLOPs and bytes read from weights, the KV cache and activations. A region
// with an empty sig had no work description (its times alone are known).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qvl::base {

// The work of one task.
struct TaskWork {
    double flops = 0, weight_bytes = 0, kv_bytes = 0, act_bytes = 0;
    bool operator==(const TaskWork&) const = default;
};

// Fills out with the tasks that the split of this region would make for n_threads threads.
using PartitionFn = void (*)(const void* ctx, int n_threads, std::vector<TaskWork>* out);

class TaskTrace {
  public:
    // The process-wide trace, or null when QVL_TASK_TRACE is unset (read once).
    static TaskTrace* active() {
        static TaskTrace* const trace = open_from_env();
        return trace;
    }

    // Graph runs and nodes (the executor). Nodes nest no regions of other nodes.
    void begin_run(std::string_view phase);
    void begin_node(std::string name);
    void end_node(const char* op, double t0_ms, double t1_ms);

    // The split of the next parallel_for of the calling thread: sig names the problem (same sig,
    // same partitions), fn(ctx, T, out) cuts it for T threads. Call just before parallel_for.
    void describe_next(std::string sig, PartitionFn fn, const void* ctx);
    // From the pool, after a job: its task count, threads and task times (us).
    void record_region(int pool_threads, double t0_ms, double t1_ms,
                       const std::vector<float>& task_us);
    void mark(std::string_view what, long id, double t_ms);

  private:
    static TaskTrace* open_from_env();
    TaskTrace(std::string path, std::vector<int> threads);
    ~TaskTrace() = default;
    void add_line(std::string line);
    friend struct TaskTraceFlush;

    struct Impl;
    Impl* impl_;
};

}  // namespace qvl::base
