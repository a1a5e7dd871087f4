#include "support/os_probe.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // linux/mman.h; older libc headers lack the name
#endif

namespace qvl::test {

bool kernel_has_populate_write() {
    const auto page = std::size_t(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    const bool ok = madvise(p, page, MADV_POPULATE_WRITE) == 0;
    munmap(p, page);
    return ok;
}

}  // namespace qvl::test
