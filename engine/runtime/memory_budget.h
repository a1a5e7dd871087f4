// Memory budget: before a session allocates its arenas, compare what it is about to need with
// what the machine (or its cgroup) can give, and refuse with a clear message instead of being
// killed by the OOM killer half-way through a prefill.
//
// Mapped weights are file-backed pages: the kernel can drop and re-read them under pressure, so
// they only count when they could not fit in memory even on their own. Anonymous memory (KV
// arena, activation arena, visual features) cannot be dropped and must fit.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace qvl::runtime {

// Bytes this process can still allocate without swapping: MemAvailable of /proc/meminfo,
// lowered to memory.max (cgroup v2) or memory.limit_in_bytes (v1) of the process's cgroup minus the
// anonymous memory already charged to it, and to the room left under an address-space limit
// (RLIMIT_AS, ulimit -v), when such limits are set. Returns 0 when nothing can be read (callers
// then skip the check: an unknown budget is not a reason to refuse).
std::uint64_t available_memory_bytes();

// The pure parts of available_memory_bytes(), for tests: MemAvailable (in bytes) from the text
// of /proc/meminfo, 0 if absent or malformed; a cgroup limit file's value ("max" or malformed: 0).
std::uint64_t parse_meminfo_available(std::string_view meminfo_text);
std::uint64_t parse_cgroup_bytes(std::string_view text);

// Refuses (kResourceExhausted) when the weights alone exceed available_bytes, or when the
// anonymous allocations kv_bytes + arena_bytes (activations and visual features) do. The
// message gives the numbers in MiB and ends with what to change ("lower --ctx-size or
// --image-max-tokens"). available_bytes == 0 means unknown: always ok. The sum saturates (no
// overflow on hostile sizes).
base::Status check_memory_budget(std::uint64_t weight_bytes_resident, std::uint64_t kv_bytes,
                                 std::uint64_t arena_bytes, std::uint64_t available_bytes);

}  // namespace qvl::runtime
