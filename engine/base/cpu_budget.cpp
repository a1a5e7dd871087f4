#include "base/cpu_budget.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace qvl::base {
namespace {

std::string_view trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

std::optional<long long> to_int(std::string_view s) {
    s = trim(s);
    long long v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p);
    if (!in) return {};
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::optional<double> tighter(std::optional<double> a, std::optional<double> b) {
    if (!a) return b;
    if (!b) return a;
    return std::min(*a, *b);
}

// The limit at `dir` and every parent up to `root` (a child cannot use more than its parents).
template <typename ReadLimit>
std::optional<double> walk_up(const std::filesystem::path& root, std::string_view cgroup_path,
                              ReadLimit read_limit) {
    std::optional<double> limit;
    std::filesystem::path rel(std::string(trim(cgroup_path)));
    for (;;) {
        limit = tighter(limit, read_limit(root / rel.relative_path()));
        if (!rel.has_relative_path()) break;
        rel = rel.parent_path();
    }
    return limit;
}

}  // namespace

int physical_cores_among(std::string_view cpuinfo, const std::set<int>& cpus) {
    std::set<std::pair<long long, long long>> cores;
    long long processor = -1, physical = 0;
    bool have_core = false;
    long long core = 0;
    auto flush = [&] {
        if (processor >= 0 && cpus.contains(int(processor))) {
            // No topology lines (some VMs): each allowed processor counts as a core.
            cores.insert(have_core ? std::pair{physical, core} : std::pair{-1LL, processor});
        }
        processor = -1, physical = 0, core = 0, have_core = false;
    };
    std::istringstream in{std::string(cpuinfo)};
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) {
            if (trim(line).empty()) flush();
            continue;
        }
        const std::string_view key = trim(std::string_view(line).substr(0, colon));
        const std::optional<long long> value = to_int(std::string_view(line).substr(colon + 1));
        if (!value) continue;
        if (key == "processor") {
            flush();
            processor = *value;
        } else if (key == "physical id") {
            physical = *value;
        } else if (key == "core id") {
            core = *value;
            have_core = true;
        }
    }
    flush();
    return int(cores.size());
}

std::optional<double> parse_cpu_max(std::string_view text) {
    text = trim(text);
    const auto space = text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    const std::optional<long long> quota = to_int(text.substr(0, space));
    const std::optional<long long> period = to_int(text.substr(space + 1));
    if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;  // also "max"
    return double(*quota) / double(*period);
}

std::optional<double> parse_cfs_quota(std::string_view quota, std::string_view period) {
    const std::optional<long long> q = to_int(quota);
    const std::optional<long long> p = to_int(period);
    if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
    return double(*q) / double(*p);
}

std::optional<double> cgroup_cpu_quota(std::string_view proc_self_cgroup,
                                       const std::string& cgroup_root) {
    const std::filesystem::path root(cgroup_root);
    std::optional<double> limit;
    std::istringstream in{std::string(proc_self_cgroup)};
    std::string line;
    while (std::getline(in, line)) {
        // "ID:CONTROLLERS:PATH"; v2 is "0::PATH".
        const auto c1 = line.find(':');
        const auto c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
        if (c2 == std::string::npos) continue;
        const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
        const std::string_view path = std::string_view(line).substr(c2 + 1);
        if (controllers.empty()) {
            limit = tighter(limit, walk_up(root, path, [](const std::filesystem::path& d) {
                                return parse_cpu_max(read_text(d / "cpu.max"));
                            }));
            continue;
        }
        std::istringstream names(controllers);
        for (std::string name; std::getline(names, name, ',');) {
            if (name != "cpu") continue;
            for (const char* mount : {"cpu,cpuacct", "cpu", "cpuacct,cpu"}) {
                limit = tighter(limit, walk_up(root / mount, path, [](const auto& d) {
                                    return parse_cfs_quota(read_text(d / "cpu.cfs_quota_us"),
                                                           read_text(d / "cpu.cfs_period_us"));
                                }));
            }
        }
    }
    return limit;
}

ThreadBudget make_thread_budget(int cores, int allowed, std::optional<double> quota) {
    ThreadBudget b;
    cores = std::max(cores, 1);
    b.threads = cores;
    b.reason = fmt::format("{} physical core{} among {} allowed CPU{}", cores,
                           cores == 1 ? "" : "s", allowed, allowed == 1 ? "" : "s");
    if (quota) {
        const int q = std::max(1, int(std::ceil(*quota - 1e-9)));
        b.reason += fmt::format(", cgroup CPU quota {:.2g}", *quota);
        b.threads = std::min(b.threads, q);
    }
    return b;
}

std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int i = 0; i < CPU_SETSIZE; ++i) {
            if (CPU_ISSET(i, &set)) cpus.push_back(i);
        }
    }
    if (cpus.empty()) {
        const long online = sysconf(_SC_NPROCESSORS_ONLN);
        for (int i = 0; i < std::max(1L, online); ++i) cpus.push_back(i);
    }
    return cpus;
}

const ThreadBudget& default_thread_budget() {
    static const ThreadBudget budget = [] {
        const std::vector<int> cpus = allowed_cpus();
        const std::set<int> allowed(cpus.begin(), cpus.end());
        int cores = physical_cores_among(read_text("/proc/cpuinfo"), allowed);
        if (cores == 0) cores = int(allowed.size());
        return make_thread_budget(cores, int(allowed.size()),
                                  cgroup_cpu_quota(read_text("/proc/self/cgroup"),
                                                   "/sys/fs/cgroup"));
    }();
    return budget;
}

}  // namespace qvl::base
