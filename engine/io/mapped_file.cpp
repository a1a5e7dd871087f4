#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace qvl::io {

using base::ErrorCode;

MappedFile::~MappedFile() {
    if (data_ != nullptr) munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        if (data_ != nullptr) munmap(const_cast<std::byte*>(data_), size_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        path_ = std::move(other.path_);
    }
    return *this;
}

base::Result<MappedFile> MappedFile::open_read_only(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT)
            return base::error(ErrorCode::kNotFound, "{}: no such file", path.string());
        return base::error(ErrorCode::kIo, "{}: cannot open: {}", path.string(),
                           std::strerror(err));
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return base::error(ErrorCode::kIo, "{}: cannot stat: {}", path.string(),
                           std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return base::error(ErrorCode::kIo, "{}: not a regular file", path.string());
    }
    MappedFile file;
    file.path_ = path;
    file.size_ = std::size_t(st.st_size);
    if (file.size_ > 0) {
        void* p = mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            return base::error(ErrorCode::kIo, "{}: cannot map {} bytes: {}", path.string(),
                               file.size_, std::strerror(err));
        }
        file.data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);
    return file;
}

void MappedFile::advise_will_need() const {
    if (data_ != nullptr) madvise(const_cast<std::byte*>(data_), size_, MADV_WILLNEED);
}

void release_mapped_pages(const void* p, std::size_t bytes) {
    const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    const auto begin = std::uintptr_t(p) / page * page;
    const auto end = (std::uintptr_t(p) + bytes + page - 1) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace qvl::io
