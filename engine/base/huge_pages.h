// Transparent huge pages for large buffers that are written once right after allocation (decoded
// images, pixel_values). On VMs a 4 KiB page fault costs microseconds, so first-touching 50 MB
// costs tens of milliseconds; with 2 MiB pages it is a few. Best effort: on kernels without THP
// (or with THP off) nothing changes.
#pragma once

#include <cstddef>
#include <vector>

namespace qvl::base {

inline constexpr std::size_t kHugePageBytes = std::size_t(2) << 20;

// Advises MADV_HUGEPAGE for every 2 MiB page that [data, data + bytes) touches (the advice only
// changes how untouched memory is backed, so covering a neighbour's part of a page is harmless),
// and collapses the first one (which malloc's header has already touched) into a huge page.
// Call before the memory is first touched; ranges under 4 MiB are left alone.
void advise_huge_pages(const void* data, std::size_t bytes);

// v.reserve(n) (v empty) with the new storage advised as above. The capacity is rounded so that
// malloc's mapping is a whole number of 2 MiB pages, which Linux places 2 MiB-aligned: then the
// whole buffer, head and tail included, can be huge pages.
template <class T>
void reserve_huge(std::vector<T>& v, std::size_t n) {
    std::size_t bytes = n * sizeof(T);
    if (bytes >= 2 * kHugePageBytes) {
        // malloc adds a 16-byte header and rounds the mapping up to 4 KiB.
        bytes = (bytes + 4096 + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes - 4096;
    }
    v.reserve(bytes / sizeof(T));
    advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

// Makes v empty with room for n elements, keeping its storage when the capacity suffices (a
// reused buffer costs no allocation and no page faults); otherwise the storage is replaced
// (contents dropped, not copied) by reserve_huge's. Fill it with insert/push_back, which
// write each element once (resize would zero-fill first).
template <class T>
void reserve_reusing(std::vector<T>& v, std::size_t n) {
    v.clear();
    if (v.capacity() >= n) return;
    std::vector<T>().swap(v);
    reserve_huge(v, n);
}

// v.resize(n) over reserve_reusing's storage: only elements past the old size are zero-filled,
// so resizing a reused buffer to the size it had is free. The contents are not preserved when
// the storage is replaced.
template <class T>
void resize_reusing(std::vector<T>& v, std::size_t n) {
    if (v.capacity() < n) reserve_reusing(v, n);
    v.resize(n);
}

}  // namespace qvl::base
