// A read-only memory map of a whole file (PROT_READ: a stray write faults instead of
// corrupting weights). Move-only; unmaps on destruction.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "base/status.h"

namespace qvl::io {

class MappedFile {
  public:
    MappedFile() = default;
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    // Missing file: kNotFound; a directory or an OS failure: kIo. An empty file maps to an
    // empty span.
    static base::Result<MappedFile> open_read_only(const std::filesystem::path& path);

    std::span<const std::byte> bytes() const { return {data_, size_}; }
    std::size_t size() const { return size_; }
    const std::filesystem::path& path() const { return path_; }

    // Hints that the whole mapping will be read soon (MADV_WILLNEED); best effort.
    void advise_will_need() const;

  private:
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
    std::filesystem::path path_;
};

// Drops this process's mapping of the pages touching [p, p + bytes) of a read-only file mapping
// (MADV_DONTNEED; rounded outward to whole pages), so they stop counting in its resident memory:
// for weights rewritten elsewhere at load. The page cache keeps them, and whatever else shares
// an edge page (a norm vector, the embedding rows of a tied lm_head) is mapped again from it if
// read. Rounding outward matters for small models, whose matrices share pages. Best effort.
void release_mapped_pages(const void* p, std::size_t bytes);

}  // namespace qvl::io
