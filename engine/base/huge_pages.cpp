#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace qvl::base {

void advise_huge_pages(const void* data, std::size_t bytes) {
    constexpr std::uintptr_t kHuge = kHugePageBytes;
    if (data == nullptr || bytes < 2 * kHuge) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(data) & ~(kHuge - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes + kHuge - 1) & ~(kHuge - 1);
    // Parts of the range outside any mapping make madvise report ENOMEM after advising the
    // mapped parts; that is fine here.
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace qvl::base
