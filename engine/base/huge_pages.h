// Transparent huge pages for large buffers that are written once right after allocation (decoded
// images, pixel_values). On VMs a 4 KiB page fault costs microseconds, so first-touching 50 MB
// costs tens of milliseconds; with 2 MiB pages it is a few. Best effort: on kernels without THP
// (or with THP off) nothing changes.
#pragma once

#include <cstddef>
#include <vector>

namespace qvl::base {

// Advises MADV_HUGEPAGE for the whole 2 MiB pages inside [data, data + bytes). Call before the
// memory is first touched; ranges under 4 MiB are left alone.
void advise_huge_pages(const void* data, std::size_t bytes);

// v.reserve(n) with the new storage advised as above (v must be empty, so that nothing is
// copied into the fresh pages before the advice).
template <class T>
void reserve_huge(std::vector<T>& v, std::size_t n) {
    v.reserve(n);
    advise_huge_pages(v.data(), n * sizeof(T));
}

}  // namespace qvl::base
