// Helpers shared by the fuzz targets: entry points that take a path get the fuzzer's bytes
// through an in-memory file, so a run touches no disk and needs no clean-up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace qvl::fuzz {

// One memfd, rewritten for each input; path() names it (/proc/self/fd/N) for APIs that open a
// path. Aborts if the kernel refuses (a broken harness must not look like a clean run).
class MemFile {
  public:
    explicit MemFile(const char* name);
    ~MemFile();
    MemFile(const MemFile&) = delete;
    MemFile& operator=(const MemFile&) = delete;

    // Replaces the contents with data[0, size).
    void write(const std::uint8_t* data, std::size_t size);
    const std::filesystem::path& path() const { return path_; }

  private:
    int fd_ = -1;
    std::filesystem::path path_;
};

// A private directory under the temp dir (for APIs that read a fixed file name in a folder),
// removed at exit. write_file replaces one file in it.
class ScratchDir {
  public:
    ScratchDir();
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    void write_file(const char* name, const std::uint8_t* data, std::size_t size);
    const std::filesystem::path& path() const { return path_; }

  private:
    std::filesystem::path path_;
};

// Aborts with a message: a violated invariant is a finding.
[[noreturn]] void fail(const std::string& what);

}  // namespace qvl::fuzz
