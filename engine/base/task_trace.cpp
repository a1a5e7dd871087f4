#include "base/task_trace.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_set>
#include <utility>

#include "base/log.h"
#include "base/timer.h"

namespace qvl::base {

struct TaskTrace::Impl {
    std::mutex mu;
    std::string path;
    std::vector<int> threads;
    std::vector<std::string> lines;
    std::unordered_set<std::string> sigs;
    std::string node;
    std::string pending_sig;
    double node_overhead0 = 0;
    // Time the trace itself spent (formatting, cutting partitions) inside the timed spans, so the
    // simulator can take it out of node times and of the gaps between them.
    double overhead_ms = 0;
};

namespace {

TaskTrace* g_trace = nullptr;

void flush_at_exit();

std::vector<int> parse_threads(const char* s) {
    std::vector<int> out;
    if (s == nullptr || *s == '\0') return {1, 2, 4, 8, 16, 32, 64};
    std::string_view v(s);
    while (!v.empty()) {
        const std::size_t comma = v.find(',');
        const std::string item(v.substr(0, comma));
        const int t = std::atoi(item.c_str());
        if (t >= 1 && t <= 4096) out.push_back(t);
        if (comma == std::string_view::npos) break;
        v.remove_prefix(comma + 1);
    }
    if (out.empty()) {
        log(LogLevel::kWarning, "QVL_TASK_TRACE_THREADS: no thread count in '{}'; using 1..64", s);
        return {1, 2, 4, 8, 16, 32, 64};
    }
    return out;
}

std::string quote(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    return out + "\"";
}

// The tasks for each thread count, run-length encoded: [[count, flops, weight, kv, act], ...].
std::string partitions_json(PartitionFn fn, const void* ctx, const std::vector<int>& threads) {
    std::string out = "{";
    std::vector<TaskWork> tasks;
    for (std::size_t i = 0; i < threads.size(); ++i) {
        tasks.clear();
        fn(ctx, threads[i], &tasks);
        out += fmt::format("{}\"{}\":[", i ? "," : "", threads[i]);
        for (std::size_t j = 0; j < tasks.size();) {
            std::size_t run = 1;
            while (j + run < tasks.size() && tasks[j + run] == tasks[j]) ++run;
            const TaskWork& w = tasks[j];
            out += fmt::format("{}[{},{:.6g},{:.6g},{:.6g},{:.6g}]", j ? "," : "", run, w.flops,
                               w.weight_bytes, w.kv_bytes, w.act_bytes);
            j += run;
        }
        out += "]";
    }
    return out + "}";
}

}  // namespace

TaskTrace* TaskTrace::open_from_env() {
    const char* path = std::getenv("QVL_TASK_TRACE");
    if (path == nullptr || *path == '\0') return nullptr;
    g_trace = new TaskTrace(path, parse_threads(std::getenv("QVL_TASK_TRACE_THREADS")));
    std::atexit(&flush_at_exit);
    return g_trace;
}

TaskTrace::TaskTrace(std::string path, std::vector<int> threads) : impl_(new Impl) {
    impl_->path = std::move(path);
    impl_->threads = std::move(threads);
}

void TaskTrace::add_line(std::string line) { impl_->lines.push_back(std::move(line)); }

void TaskTrace::begin_run(std::string_view phase) {
    const std::lock_guard lock(impl_->mu);
    add_line(fmt::format(R"({{"ev":"run","phase":{},"t":{:.4f},"ovh":{:.4f}}})", quote(phase),
                         now_ms(), impl_->overhead_ms));
}

void TaskTrace::begin_node(std::string name) {
    const std::lock_guard lock(impl_->mu);
    impl_->node = std::move(name);
    impl_->node_overhead0 = impl_->overhead_ms;
}

void TaskTrace::end_node(const char* op, double t0_ms, double t1_ms) {
    const double start = now_ms();
    const std::lock_guard lock(impl_->mu);
    // ovh: the trace's own time inside [t0, t1]; ovc: its total so far.
    add_line(fmt::format(
        R"({{"ev":"node","name":{},"op":"{}","t0":{:.4f},"t1":{:.4f},"ovh":{:.4f},"ovc":{:.4f}}})",
        quote(impl_->node), op, t0_ms, t1_ms, impl_->overhead_ms - impl_->node_overhead0,
        impl_->overhead_ms));
    impl_->node.clear();
    impl_->overhead_ms += now_ms() - start;
}

void TaskTrace::describe_next(std::string sig, PartitionFn fn, const void* ctx) {
    const double start = now_ms();
    const std::lock_guard lock(impl_->mu);
    if (impl_->sigs.insert(sig).second) {
        add_line(fmt::format(R"({{"ev":"part","sig":{},"parts":{}}})", quote(sig),
                             partitions_json(fn, ctx, impl_->threads)));
    }
    impl_->pending_sig = std::move(sig);
    impl_->overhead_ms += now_ms() - start;
}

void TaskTrace::record_region(int pool_threads, double t0_ms, double t1_ms,
                              const std::vector<float>& task_us) {
    const double start = now_ms();
    const std::lock_guard lock(impl_->mu);
    std::string us;
    for (std::size_t i = 0; i < task_us.size(); ++i) {
        us += fmt::format("{}{:.2f}", i ? "," : "", task_us[i]);
    }
    add_line(fmt::format(
        R"({{"ev":"region","node":{},"sig":{},"threads":{},"t0":{:.4f},"t1":{:.4f},"us":[{}]}})",
        quote(impl_->node), quote(impl_->pending_sig), pool_threads, t0_ms, t1_ms, us));
    impl_->pending_sig.clear();
    impl_->overhead_ms += now_ms() - start;
}

void TaskTrace::mark(std::string_view what, long id, double t_ms) {
    const std::lock_guard lock(impl_->mu);
    add_line(fmt::format(R"({{"ev":"mark","what":{},"id":{},"t":{:.4f},"ovh":{:.4f}}})",
                         quote(what), id, t_ms, impl_->overhead_ms));
}

struct TaskTraceFlush {
    static void run(TaskTrace* t) {
        const std::lock_guard lock(t->impl_->mu);
        std::FILE* f = std::fopen(t->impl_->path.c_str(), "w");
        if (f == nullptr) {
            log(LogLevel::kWarning, "QVL_TASK_TRACE: cannot write {}", t->impl_->path);
            return;
        }
        for (const std::string& line : t->impl_->lines) {
            std::fputs(line.c_str(), f);
            std::fputc('\n', f);
        }
        std::fclose(f);
    }
};

namespace {
void flush_at_exit() {
    if (g_trace != nullptr) TaskTraceFlush::run(g_trace);
}
}  // namespace

}  // namespace qvl::base
