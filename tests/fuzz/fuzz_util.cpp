#include "fuzz_util.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>

namespace qvl::fuzz {

void fail(const std::string& what) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what.c_str());
    std::abort();
}

MemFile::MemFile(const char* name) {
    fd_ = memfd_create(name, MFD_CLOEXEC);
    if (fd_ < 0) fail("memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemFile::~MemFile() {
    if (fd_ >= 0) close(fd_);
}

void MemFile::write(const std::uint8_t* data, std::size_t size) {
    if (ftruncate(fd_, 0) != 0) fail("ftruncate failed");
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = pwrite(fd_, data + done, size - done, off_t(done));
        if (n <= 0) fail("pwrite to the memfd failed");
        done += std::size_t(n);
    }
}

ScratchDir::ScratchDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "qvl-fuzz-XXXXXX").string();
    if (mkdtemp(templ.data()) == nullptr) fail("mkdtemp failed");
    path_ = templ;
}

ScratchDir::~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

void ScratchDir::write_file(const char* name, const std::uint8_t* data, std::size_t size) {
    std::ofstream out(path_ / name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    if (!out) fail(std::string("cannot write ") + name);
}

}  // namespace qvl::fuzz
