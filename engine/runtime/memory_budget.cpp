#include "runtime/memory_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace qvl::runtime {

using base::ErrorCode;

namespace {

// cgroup "limits" at or above this mean "no limit" (v1 writes 2^63 rounded down to a page).
constexpr std::uint64_t kNoLimit = std::uint64_t(1) << 60;
constexpr double kMiB = 1024.0 * 1024.0;

std::string read_small_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Leading unsigned decimal of s after spaces, or false.
bool parse_u64(std::string_view s, std::uint64_t* out) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && end != s.data();
}

// The value of "key <n>" in a memory.stat text, or 0.
std::uint64_t stat_value(std::string_view text, std::string_view key) {
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        const std::string_view line = text.substr(pos, eol - pos);
        if (line.size() > key.size() && line.substr(0, key.size()) == key &&
            line[key.size()] == ' ') {
            std::uint64_t v = 0;
            if (parse_u64(line.substr(key.size() + 1), &v)) return v;
        }
        pos = eol + 1;
    }
    return 0;
}

// Room left under one cgroup's limit: limit minus the anonymous memory already charged (page
// cache in the usage figure is reclaimable, so it does not count). 0: no limit here.
std::uint64_t cgroup_room(const std::string& limit_file, const std::string& stat_file,
                          std::string_view anon_key) {
    const std::uint64_t limit = parse_cgroup_bytes(read_small_file(limit_file));
    if (limit == 0 || limit >= kNoLimit) return 0;
    const std::uint64_t anon = stat_value(read_small_file(stat_file), anon_key);
    return limit > anon ? limit - anon : 1;  // 1, not 0: a full cgroup is not "unknown"
}

// The cgroup path of this process for one hierarchy ("0::" for v2, "memory" for v1).
std::string own_cgroup(std::string_view controller) {
    const std::string text = read_small_file("/proc/self/cgroup");
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        const std::string_view line = std::string_view(text).substr(pos, eol - pos);
        const std::size_t c1 = line.find(':');
        const std::size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
        if (c2 != std::string_view::npos && line.substr(c1 + 1, c2 - c1 - 1) == controller) {
            return std::string(line.substr(c2 + 1));
        }
        pos = eol + 1;
    }
    return {};
}

void lower_to(std::uint64_t room, std::uint64_t* best) {
    if (room != 0 && (*best == 0 || room < *best)) *best = room;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

}  // namespace

std::uint64_t parse_meminfo_available(std::string_view meminfo_text) {
    constexpr std::string_view kKey = "MemAvailable:";
    std::size_t pos = 0;
    while (pos < meminfo_text.size()) {
        std::size_t eol = meminfo_text.find('\n', pos);
        if (eol == std::string_view::npos) eol = meminfo_text.size();
        const std::string_view line = meminfo_text.substr(pos, eol - pos);
        if (line.substr(0, kKey.size()) == kKey) {
            std::uint64_t kib = 0;
            if (!parse_u64(line.substr(kKey.size()), &kib) || kib > UINT64_MAX / 1024) return 0;
            return kib * 1024;  // /proc/meminfo's "kB" are KiB
        }
        pos = eol + 1;
    }
    return 0;
}

std::uint64_t parse_cgroup_bytes(std::string_view text) {
    std::uint64_t v = 0;
    return parse_u64(text, &v) ? v : 0;  // "max" fails to parse: no limit
}

std::uint64_t available_memory_bytes() {
    std::uint64_t best = parse_meminfo_available(read_small_file("/proc/meminfo"));
    // A container usually sees its own cgroup at the mount root; a host process sees its path
    // below it. Both are tried; the tightest limit wins.
    const std::string v2 = own_cgroup("");
    for (const std::string& dir : {std::string("/sys/fs/cgroup"), "/sys/fs/cgroup" + v2}) {
        lower_to(cgroup_room(dir + "/memory.max", dir + "/memory.stat", "anon"), &best);
    }
    const std::string v1 = own_cgroup("memory");
    for (const std::string& dir :
         {std::string("/sys/fs/cgroup/memory"), "/sys/fs/cgroup/memory" + v1}) {
        lower_to(cgroup_room(dir + "/memory.limit_in_bytes", dir + "/memory.stat", "total_rss"),
                 &best);
    }
    // An address-space limit (ulimit -v) caps what malloc can return, whatever the machine has.
    rlimit as{};
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        std::uint64_t vm_pages = 0;
        const long page = sysconf(_SC_PAGESIZE);
        if (parse_u64(read_small_file("/proc/self/statm"), &vm_pages) && page > 0) {
            const std::uint64_t used = vm_pages * std::uint64_t(page);
            lower_to(as.rlim_cur > used ? as.rlim_cur - used : 1, &best);
        }
    }
    return best;
}

base::Status check_memory_budget(std::uint64_t weight_bytes_resident, std::uint64_t kv_bytes,
                                 std::uint64_t arena_bytes, std::uint64_t available_bytes) {
    if (available_bytes == 0) return base::Status();
    if (weight_bytes_resident > available_bytes) {
        return base::error(ErrorCode::kResourceExhausted,
                           "memory budget: the weights need {:.0f} MiB but only {:.0f} MiB of "
                           "memory are available; use a machine with more memory",
                           double(weight_bytes_resident) / kMiB, double(available_bytes) / kMiB);
    }
    const std::uint64_t need = saturating_add(kv_bytes, arena_bytes);
    if (need > available_bytes) {
        return base::error(ErrorCode::kResourceExhausted,
                           "memory budget: the session needs {:.0f} MiB (KV cache {:.0f} MiB + "
                           "activations {:.0f} MiB) but only {:.0f} MiB of memory are available; "
                           "lower --ctx-size or --image-max-tokens",
                           double(need) / kMiB, double(kv_bytes) / kMiB, double(arena_bytes) / kMiB,
                           double(available_bytes) / kMiB);
    }
    return base::Status();
}

}  // namespace qvl::runtime
