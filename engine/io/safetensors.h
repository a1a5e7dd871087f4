// Safetensors reading: a read-only mmap of each file and zero-copy views of its tensors.
//
// Format: 8-byte little-endian header length N, N bytes of JSON object {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {...}}, then the data section; offsets are relative
// to the start of the data section. Every file is treated as hostile: open() validates the header
// length against the file size, the JSON, each entry's types, the dtype (BF16, F16 and F32 only),
// shape x dtype size against the byte range, ranges inside the data section, no overlaps and no
// duplicate names. `__metadata__` is ignored. Every failure is a Status naming the file, the
// tensor and the numbers (kCorruptFile for malformed bytes, kUnsupported for a dtype qvl does not
// read, kNotFound/kIo from the OS); nothing aborts.
//
// Views (TensorInfo::data) point into the mapping and live as long as the SafetensorsFile /
// TensorStore that produced them; moving either keeps the views valid. Data pointers have no
// alignment guarantee beyond what the file provides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "io/mapped_file.h"

namespace qvl::io {

// The element types qvl reads. Other safetensors dtypes (I64, F64, F8_E4M3, ...) are rejected by
// name at open().
enum class DType { kBF16, kF16, kF32 };

// "BF16", "F16", "F32" (the safetensors spelling).
const char* dtype_name(DType dtype);
// Bytes per element: 2, 2, 4.
std::size_t dtype_size(DType dtype);

// One tensor of a file. data points at n_bytes inside the read-only mapping.
struct TensorInfo {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<std::int64_t> shape;
    const std::byte* data = nullptr;
    std::uint64_t n_bytes = 0;

    std::uint64_t num_elements() const { return n_bytes / dtype_size(dtype); }
};

// "[151936, 2048]"
std::string shape_string(const std::vector<std::int64_t>& shape);

class SafetensorsFile {
  public:
    // Header lengths above this are refused before reading them (real headers are < 1 MB).
    static constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t(100) << 20;

    // Maps and validates one file. Errors: kNotFound (no file), kIo, kCorruptFile, kUnsupported.
    static base::Result<SafetensorsFile> open(const std::filesystem::path& path);

    // The tensor with this exact name, or nullptr.
    const TensorInfo* find(std::string_view name) const;
    // All tensors in header order.
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const std::filesystem::path& path() const { return file_.path(); }
    // Size of the whole file in bytes.
    std::uint64_t size_bytes() const { return file_.size(); }

  private:
    MappedFile file_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, std::size_t, std::less<>> index_;
};

// A model folder: either model.safetensors, or model.safetensors.index.json ({"weight_map":
// {tensor: shard file name}}) plus its shards. The index is preferred when both exist. Every
// tensor the index names must be in the shard it names; shard names must be plain file names in
// the folder; a tensor may appear in only one shard.
class TensorStore {
  public:
    static constexpr const char* kSingleFileName = "model.safetensors";
    static constexpr const char* kIndexFileName = "model.safetensors.index.json";

    // Errors: kNotFound (folder, file, shard or indexed tensor missing), kCorruptFile (index or
    // shard malformed), plus anything SafetensorsFile::open reports.
    static base::Result<TensorStore> open_dir(const std::filesystem::path& model_dir);

    // The tensor with this exact name in any file, or nullptr.
    const TensorInfo* find(std::string_view name) const;
    // The file holding `name`, or nullptr.
    const std::filesystem::path* file_of(std::string_view name) const;
    // Sum of the sizes of all mapped files.
    std::uint64_t total_bytes() const;
    const std::vector<SafetensorsFile>& files() const { return files_; }
    const std::filesystem::path& dir() const { return dir_; }

  private:
    std::filesystem::path dir_;
    std::vector<SafetensorsFile> files_;
    // name -> (file index, tensor index)
    std::map<std::string, std::pair<std::size_t, std::size_t>, std::less<>> index_;
};

}  // namespace qvl::io
