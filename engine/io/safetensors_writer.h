// Writing safetensors files (the tests, and qvl-synth's random checkpoints). The header lists
// the tensors in the given order (names JSON-escaped) with back-to-back data offsets, carries
// {"__metadata__": {"format": "pt"}} and is padded with spaces to a multiple of 8 bytes so every
// tensor starts 8-byte aligned relative to the data section. The result reads back through
// SafetensorsFile::open.
//
// Two ways in: write_safetensors() when every tensor's bytes are at hand, or SafetensorsWriter
// to stream the data (create() writes the header, append() takes the bytes of the tensors in
// order in chunks of any size, finish() checks the total and closes). Errors: kInvalidArgument
// for bad specs (empty or duplicate names, negative dims, data size != shape x dtype size,
// appending past the end, finishing early), kIo when the OS refuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/safetensors.h"

namespace qvl::io {

struct TensorSpec {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<std::int64_t> shape;
};

struct TensorToWrite {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<std::int64_t> shape;
    std::span<const std::byte> data;  // exactly shape x dtype size bytes
};

class SafetensorsWriter {
  public:
    SafetensorsWriter() = default;
    ~SafetensorsWriter();
    SafetensorsWriter(SafetensorsWriter&& other) noexcept;
    SafetensorsWriter& operator=(SafetensorsWriter&& other) noexcept;
    SafetensorsWriter(const SafetensorsWriter&) = delete;
    SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

    // Creates (truncates) the file and writes the header.
    static base::Result<SafetensorsWriter> create(const std::filesystem::path& path,
                                                  std::span<const TensorSpec> tensors);
    // Appends data bytes (the tensors' contents in spec order, concatenated).
    base::Status append(std::span<const std::byte> bytes);
    // Checks that exactly the announced number of bytes was written, then closes the file.
    base::Status finish();

    std::uint64_t data_bytes_expected() const { return expected_; }
    std::uint64_t data_bytes_written() const { return written_; }

  private:
    void close();
    std::FILE* out_ = nullptr;
    std::filesystem::path path_;
    std::uint64_t expected_ = 0;
    std::uint64_t written_ = 0;
};

// The padded header SafetensorsWriter::create writes for these tensors (errors name `path`),
// and in *data_bytes the size of the data section it announces.
base::Result<std::string> safetensors_header(const std::filesystem::path& path,
                                             std::span<const TensorSpec> tensors,
                                             std::uint64_t* data_bytes);

// Writes a whole file in one call.
base::Status write_safetensors(const std::filesystem::path& path,
                               std::span<const TensorToWrite> tensors);

}  // namespace qvl::io
