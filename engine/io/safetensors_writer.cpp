#include "io/safetensors_writer.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "base/checked_math.h"
#include "io/json_write.h"

namespace qvl::io {

using base::ErrorCode;

base::Result<std::string> safetensors_header(const std::filesystem::path& path,
                                             std::span<const TensorSpec> tensors,
                                             std::uint64_t* data_bytes) {
    std::string header = R"({"__metadata__":{"format":"pt"})";
    std::set<std::string_view> seen;
    std::uint64_t offset = 0;
    for (const TensorSpec& t : tensors) {
        if (t.name.empty() || t.name == "__metadata__") {
            return base::error(ErrorCode::kInvalidArgument, "{}: invalid tensor name '{}'",
                               path.string(), t.name);
        }
        if (!seen.insert(t.name).second) {
            return base::error(ErrorCode::kInvalidArgument, "{}: tensor '{}' given twice",
                               path.string(), t.name);
        }
        std::uint64_t bytes = dtype_size(t.dtype);
        for (const std::int64_t d : t.shape) {
            if (d < 0 || !base::checked_mul(bytes, std::uint64_t(d), &bytes)) {
                return base::error(ErrorCode::kInvalidArgument, "{}: tensor '{}': bad shape {}",
                                   path.string(), t.name, shape_string(t.shape));
            }
        }
        std::uint64_t end = 0;
        if (!base::checked_add(offset, bytes, &end)) {
            return base::error(ErrorCode::kInvalidArgument, "{}: data section overflows",
                               path.string());
        }
        header += ',';
        header += json_quote(t.name);
        header += fmt::format(R"(:{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})",
                              dtype_name(t.dtype), fmt::join(t.shape, ","), offset, end);
        offset = end;
    }
    header += '}';
    while (header.size() % 8 != 0) header += ' ';
    *data_bytes = offset;
    return header;
}

SafetensorsWriter::~SafetensorsWriter() { close(); }

SafetensorsWriter::SafetensorsWriter(SafetensorsWriter&& other) noexcept
    : out_(std::exchange(other.out_, nullptr)),
      path_(std::move(other.path_)),
      expected_(other.expected_),
      written_(other.written_) {}

SafetensorsWriter& SafetensorsWriter::operator=(SafetensorsWriter&& other) noexcept {
    if (this != &other) {
        close();
        out_ = std::exchange(other.out_, nullptr);
        path_ = std::move(other.path_);
        expected_ = other.expected_;
        written_ = other.written_;
    }
    return *this;
}

void SafetensorsWriter::close() {
    if (out_ != nullptr) std::fclose(out_);
    out_ = nullptr;
}

base::Result<SafetensorsWriter> SafetensorsWriter::create(const std::filesystem::path& path,
                                                          std::span<const TensorSpec> tensors) {
    SafetensorsWriter w;
    w.path_ = path;
    QVL_ASSIGN_OR_RETURN(const std::string header, safetensors_header(path, tensors, &w.expected_));
    w.out_ = std::fopen(path.c_str(), "wb");
    if (w.out_ == nullptr) {
        return base::error(ErrorCode::kIo, "{}: cannot create: {}", path.string(),
                           std::strerror(errno));
    }
    unsigned char prefix[8];
    std::uint64_t n = header.size();
    for (unsigned char& b : prefix) {
        b = static_cast<unsigned char>(n & 0xff);
        n >>= 8;
    }
    if (std::fwrite(prefix, 1, sizeof prefix, w.out_) != sizeof prefix ||
        std::fwrite(header.data(), 1, header.size(), w.out_) != header.size()) {
        return base::error(ErrorCode::kIo, "{}: write failed: {}", path.string(),
                           std::strerror(errno));
    }
    return w;
}

base::Status SafetensorsWriter::append(std::span<const std::byte> bytes) {
    if (out_ == nullptr) {
        return base::error(ErrorCode::kInvalidArgument, "{}: append after finish", path_.string());
    }
    if (bytes.size() > expected_ - written_) {
        return base::error(ErrorCode::kInvalidArgument,
                           "{}: appending {} bytes would pass the {} announced (written {})",
                           path_.string(), bytes.size(), expected_, written_);
    }
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), out_) != bytes.size()) {
        return base::error(ErrorCode::kIo, "{}: write failed: {}", path_.string(),
                           std::strerror(errno));
    }
    written_ += bytes.size();
    return base::Status();
}

base::Status SafetensorsWriter::finish() {
    if (out_ == nullptr) {
        return base::error(ErrorCode::kInvalidArgument, "{}: finish called twice", path_.string());
    }
    if (written_ != expected_) {
        close();
        return base::error(ErrorCode::kInvalidArgument,
                           "{}: {} data bytes written, the header announced {}", path_.string(),
                           written_, expected_);
    }
    const bool flushed = std::fflush(out_) == 0;
    const bool closed = std::fclose(out_) == 0;
    out_ = nullptr;
    if (!flushed || !closed) {
        return base::error(ErrorCode::kIo, "{}: cannot finish writing: {}", path_.string(),
                           std::strerror(errno));
    }
    return base::Status();
}

base::Status write_safetensors(const std::filesystem::path& path,
                               std::span<const TensorToWrite> tensors) {
    std::vector<TensorSpec> specs;
    specs.reserve(tensors.size());
    for (const TensorToWrite& t : tensors) specs.push_back({t.name, t.dtype, t.shape});
    QVL_ASSIGN_OR_RETURN(SafetensorsWriter writer, SafetensorsWriter::create(path, specs));
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        // The header was built from the shapes; the data must match them exactly.
        std::uint64_t bytes = dtype_size(specs[i].dtype);
        for (const std::int64_t d : specs[i].shape) bytes *= std::uint64_t(d);
        if (tensors[i].data.size() != bytes) {
            return base::error(ErrorCode::kInvalidArgument,
                               "{}: tensor '{}': {} {} needs {} bytes, {} given", path.string(),
                               specs[i].name, dtype_name(specs[i].dtype),
                               shape_string(specs[i].shape), bytes, tensors[i].data.size());
        }
        QVL_TRY(writer.append(tensors[i].data));
    }
    return writer.finish();
}

}  // namespace qvl::io
