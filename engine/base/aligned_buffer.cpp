#include "base/aligned_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace qvl::base {

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
        std::free(data_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

Result<AlignedBuffer> AlignedBuffer::allocate(std::size_t bytes, const char* what, bool zero) {
    AlignedBuffer buf;
    if (bytes == 0) return buf;
    const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded < bytes) {
        return error(ErrorCode::kResourceExhausted, "{}: {} bytes is too large", what, bytes);
    }
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) {
        return error(ErrorCode::kResourceExhausted, "{}: could not allocate {} bytes", what, bytes);
    }
    if (zero) std::memset(p, 0, rounded);
    buf.data_ = static_cast<std::byte*>(p);
    buf.size_ = bytes;
    return buf;
}

bool AlignedBuffer::populate(std::size_t offset, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    if (offset >= size_ || bytes == 0) return false;
    const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<std::uintptr_t>(data_);
    const std::uintptr_t lo =
        std::max((start + offset) / page * page, (start + page - 1) / page * page);
    const std::uintptr_t hi =
        std::min((start + offset + std::min(bytes, size_ - offset) + page - 1) / page * page,
                 (start + size_) / page * page);
    return hi > lo && madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE) == 0;
#else
    (void)offset, (void)bytes;
    return false;
#endif
}

}  // namespace qvl::base
