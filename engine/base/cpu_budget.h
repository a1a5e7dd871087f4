// How many compute threads this process should use by default: the physical cores among the CPUs
// it may run on (sched_getaffinity: taskset, a container's cpuset) and within its cgroup CPU
// quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us: `docker run --cpus`,
// Kubernetes CPU limits). More threads than that only time-slice against each other.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::base {

struct ThreadBudget {
    int threads = 1;     // at least 1
    std::string reason;  // e.g. "2 physical cores among 4 allowed CPUs, cgroup quota 1.5 CPUs"
};

// Computed once from /proc and /sys; thread-safe.
const ThreadBudget& default_thread_budget();
inline int default_threads() { return default_thread_budget().threads; }

// The CPUs this process may run on (sched_getaffinity), in increasing order; all online CPUs
// when the call fails.
std::vector<int> allowed_cpus();

// The pieces, separated so tests can feed them fixture files.
// Distinct (physical id, core id) pairs among the "processor" entries of /proc/cpuinfo text
// whose number is in `cpus`; 0 when the text names none of them.
int physical_cores_among(std::string_view cpuinfo, const std::set<int>& cpus);
// cgroup v2 "cpu.max" ("QUOTA PERIOD" or "max PERIOD"): CPUs allowed, nullopt when unlimited or
// malformed.
std::optional<double> parse_cpu_max(std::string_view text);
// cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us contents (quota -1: unlimited).
std::optional<double> parse_cfs_quota(std::string_view quota, std::string_view period);
// The CPU quota of the cgroup named in `proc_self_cgroup` (the text of /proc/self/cgroup), with
// the cgroup file systems mounted under `cgroup_root` (normally /sys/fs/cgroup): v2's cpu.max,
// else v1's cpu controller; the tightest limit on the way up to the root counts.
std::optional<double> cgroup_cpu_quota(std::string_view proc_self_cgroup,
                                       const std::string& cgroup_root);
// threads = min(cores, ceil(quota)), at least 1, with the reason spelled out.
ThreadBudget make_thread_budget(int cores, int allowed, std::optional<double> quota);

}  // namespace qvl::base
