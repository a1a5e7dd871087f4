#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <system_error>

#include "base/checked_math.h"
#include "io/json.h"

namespace qvl::io {

using base::ErrorCode;

const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::kBF16:
            return "BF16";
        case DType::kF16:
            return "F16";
        case DType::kF32:
            return "F32";
    }
    return "?";
}

std::size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::kBF16:
        case DType::kF16:
            return 2;
        case DType::kF32:
            return 4;
    }
    return 1;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

namespace {

constexpr std::uint64_t kLengthPrefixBytes = 8;

std::uint64_t read_u64_le(const std::byte* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | std::uint64_t(std::to_integer<unsigned>(p[i]));
    return v;
}

bool parse_dtype(std::string_view s, DType* out) {
    if (s == "BF16") {
        *out = DType::kBF16;
    } else if (s == "F16") {
        *out = DType::kF16;
    } else if (s == "F32") {
        *out = DType::kF32;
    } else {
        return false;
    }
    return true;
}

// Where one entry's bytes live, relative to the data section.
struct Range {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

// Validates one header entry and fills `info` (all but data) and `range`.
base::Status parse_entry(const std::string& file, const std::string& name, const JsonValue& entry,
                         std::uint64_t data_bytes, TensorInfo* info, Range* range) {
    if (!entry.is_object()) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: tensor '{}': entry is {}, expected an object", file, name,
                           JsonValue::type_name(entry.type()));
    }
    const JsonValue* dtype = entry.find("dtype");
    const JsonValue* shape = entry.find("shape");
    const JsonValue* offsets = entry.find("data_offsets");
    for (auto [key, value] : {std::pair{"dtype", dtype}, std::pair{"shape", shape},
                              std::pair{"data_offsets", offsets}}) {
        if (value == nullptr) {
            return base::error(ErrorCode::kCorruptFile, "{}: tensor '{}': missing '{}'", file, name,
                               key);
        }
    }
    if (!dtype->is_string()) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: tensor '{}': 'dtype' is {}, expected a string", file, name,
                           JsonValue::type_name(dtype->type()));
    }
    if (!parse_dtype(dtype->as_string(), &info->dtype)) {
        return base::error(ErrorCode::kUnsupported,
                           "{}: tensor '{}': dtype {} is not supported (qvl reads BF16, F16, F32)",
                           file, name, dtype->as_string());
    }
    if (!shape->is_array()) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: tensor '{}': 'shape' is {}, expected an array", file, name,
                           JsonValue::type_name(shape->type()));
    }
    std::uint64_t expected_bytes = dtype_size(info->dtype);
    info->shape.clear();
    for (const JsonValue& dim : shape->items()) {
        if (!dim.is_integer() || dim.as_int() < 0) {
            return base::error(ErrorCode::kCorruptFile,
                               "{}: tensor '{}': shape has a dimension that is not a non-negative "
                               "integer (dimension {})",
                               file, name, info->shape.size());
        }
        info->shape.push_back(dim.as_int());
        if (!base::checked_mul(expected_bytes, std::uint64_t(dim.as_int()), &expected_bytes)) {
            return base::error(ErrorCode::kCorruptFile,
                               "{}: tensor '{}': shape {}... overflows 64-bit byte counts", file,
                               name, shape_string(info->shape));
        }
    }
    if (!offsets->is_array() || offsets->items().size() != 2 || !offsets->items()[0].is_integer() ||
        !offsets->items()[1].is_integer() || offsets->items()[0].as_int() < 0 ||
        offsets->items()[1].as_int() < 0) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: tensor '{}': 'data_offsets' must be two non-negative integers",
                           file, name);
    }
    range->begin = std::uint64_t(offsets->items()[0].as_int());
    range->end = std::uint64_t(offsets->items()[1].as_int());
    if (range->begin > range->end) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: tensor '{}': data_offsets begin {} is after end {}", file, name,
                           range->begin, range->end);
    }
    if (range->end > data_bytes) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: tensor '{}': data_offsets [{}, {}) run past the data section of {} "
                           "bytes",
                           file, name, range->begin, range->end, data_bytes);
    }
    const std::uint64_t held = range->end - range->begin;
    if (held != expected_bytes) {
        return base::error(
            ErrorCode::kCorruptFile, "{}: tensor '{}': {} {} needs {} bytes, its range holds {}",
            file, name, dtype_name(info->dtype), shape_string(info->shape), expected_bytes, held);
    }
    info->n_bytes = held;
    return base::Status();
}

}  // namespace

base::Result<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
    SafetensorsFile out;
    QVL_ASSIGN_OR_RETURN(out.file_, MappedFile::open_read_only(path));
    const std::string file = path.string();
    const std::span<const std::byte> bytes = out.file_.bytes();
    if (bytes.empty()) {
        return base::error(ErrorCode::kCorruptFile, "{}: empty file, not a safetensors file", file);
    }
    if (bytes.size() < kLengthPrefixBytes) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: file is {} bytes, too short for the 8-byte header length", file,
                           bytes.size());
    }
    const std::uint64_t header_bytes = read_u64_le(bytes.data());
    if (header_bytes > kMaxHeaderBytes) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: header length {} is over the limit of {} bytes", file, header_bytes,
                           kMaxHeaderBytes);
    }
    if (header_bytes > bytes.size() - kLengthPrefixBytes) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: header length {} exceeds the {} bytes after the length prefix",
                           file, header_bytes, bytes.size() - kLengthPrefixBytes);
    }
    const std::string_view header_text(reinterpret_cast<const char*>(bytes.data()) + 8,
                                       std::size_t(header_bytes));
    base::Result<JsonValue> parsed = parse_json(header_text, file + ": header");
    if (!parsed.ok()) return parsed.status();
    const JsonValue& header = parsed.value();
    if (!header.is_object()) {
        return base::error(ErrorCode::kCorruptFile, "{}: header is {}, expected a JSON object",
                           file, JsonValue::type_name(header.type()));
    }

    const std::byte* data_section = bytes.data() + kLengthPrefixBytes + header_bytes;
    const std::uint64_t data_bytes = bytes.size() - kLengthPrefixBytes - header_bytes;
    std::vector<Range> ranges;
    for (const JsonValue::Member& member : header.members()) {
        const std::string& name = member.first;
        if (name == "__metadata__") continue;
        if (out.index_.count(name) != 0) {
            return base::error(ErrorCode::kCorruptFile,
                               "{}: tensor '{}' appears twice in the header", file, name);
        }
        TensorInfo info;
        info.name = name;
        Range range;
        QVL_TRY(parse_entry(file, name, member.second, data_bytes, &info, &range));
        info.data = data_section + range.begin;
        out.index_.emplace(name, out.tensors_.size());
        out.tensors_.push_back(std::move(info));
        ranges.push_back(range);
    }

    // Overlap check over the non-empty ranges, in offset order.
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        if (ranges[i].end > ranges[i].begin) order.push_back(i);
    }
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return ranges[a].begin < ranges[b].begin; });
    for (std::size_t k = 1; k < order.size(); ++k) {
        const Range& prev = ranges[order[k - 1]];
        const Range& cur = ranges[order[k]];
        if (cur.begin < prev.end) {
            return base::error(ErrorCode::kCorruptFile,
                               "{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", file,
                               out.tensors_[order[k - 1]].name, prev.begin, prev.end,
                               out.tensors_[order[k]].name, cur.begin, cur.end);
        }
    }
    return out;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

// A shard name from the index must name a file directly inside the model folder.
bool is_plain_file_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\0') == std::string::npos;
}

}  // namespace

namespace {

using TensorIndex = std::map<std::string, std::pair<std::size_t, std::size_t>, std::less<>>;
using ShardNumbers = std::map<std::string, std::size_t, std::less<>>;

// Opens each distinct shard the index's weight_map names once, in first-mention order, into
// *files; *shard_of_name numbers them.
base::Status open_shards(const std::filesystem::path& model_dir, const std::string& index_name,
                         const JsonValue& weight_map, std::vector<SafetensorsFile>* files,
                         ShardNumbers* shard_of_name) {
    for (const JsonValue::Member& m : weight_map.members()) {
        if (!m.second.is_string()) {
            return base::error(ErrorCode::kCorruptFile,
                               "{}: weight_map entry for '{}' is {}, expected a file name",
                               index_name, m.first, JsonValue::type_name(m.second.type()));
        }
        const std::string& shard = m.second.as_string();
        if (!is_plain_file_name(shard)) {
            return base::error(ErrorCode::kCorruptFile,
                               "{}: tensor '{}' maps to '{}', which is not a file name in the "
                               "model folder",
                               index_name, m.first, shard);
        }
        if (shard_of_name->count(shard) != 0) continue;
        base::Result<SafetensorsFile> file = SafetensorsFile::open(model_dir / shard);
        if (!file.ok()) {
            if (file.status().code() == ErrorCode::kNotFound) {
                return base::error(ErrorCode::kNotFound,
                                   "{}: shard '{}' (holding tensor '{}') does not exist",
                                   index_name, shard, m.first);
            }
            return file.status();
        }
        shard_of_name->emplace(shard, files->size());
        files->push_back(std::move(file).value());
    }
    return base::Status();
}

// Binds every name of the weight_map to its tensor in its shard.
base::Status bind_listed(const std::string& index_name, const JsonValue& weight_map,
                         const std::vector<SafetensorsFile>& files,
                         const ShardNumbers& shard_of_name, TensorIndex* index) {
    for (const JsonValue::Member& m : weight_map.members()) {
        const std::size_t f = shard_of_name.find(m.second.as_string())->second;
        const TensorInfo* info = files[f].find(m.first);
        if (info == nullptr) {
            return base::error(ErrorCode::kNotFound,
                               "{}: tensor '{}' is mapped to shard '{}', which does not contain it",
                               index_name, m.first, m.second.as_string());
        }
        const std::size_t t = std::size_t(info - files[f].tensors().data());
        const auto [it, inserted] = index->emplace(m.first, std::pair{f, t});
        if (!inserted && it->second.first != f) {
            return base::error(ErrorCode::kCorruptFile, "{}: tensor '{}' is mapped to two shards",
                               index_name, m.first);
        }
    }
    return base::Status();
}

// Tensors a shard holds but the index does not list are still reachable, unless the name is
// already bound elsewhere (which would make the folder ambiguous).
base::Status bind_unlisted(const std::filesystem::path& model_dir,
                           const std::vector<SafetensorsFile>& files, TensorIndex* index) {
    for (std::size_t f = 0; f < files.size(); ++f) {
        const std::vector<TensorInfo>& tensors = files[f].tensors();
        for (std::size_t t = 0; t < tensors.size(); ++t) {
            const auto [it, inserted] = index->emplace(tensors[t].name, std::pair{f, t});
            if (!inserted && it->second.first != f) {
                return base::error(ErrorCode::kCorruptFile,
                                   "{}: tensor '{}' appears in both {} and {}", model_dir.string(),
                                   tensors[t].name,
                                   files[it->second.first].path().filename().string(),
                                   files[f].path().filename().string());
            }
        }
    }
    return base::Status();
}

}  // namespace

base::Result<TensorStore> TensorStore::open_dir(const std::filesystem::path& model_dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(model_dir, ec)) {
        return base::error(ErrorCode::kNotFound, "{}: no such model folder", model_dir.string());
    }
    TensorStore store;
    store.dir_ = model_dir;
    const std::filesystem::path index_path = model_dir / kIndexFileName;
    const std::filesystem::path single_path = model_dir / kSingleFileName;

    if (!std::filesystem::exists(index_path, ec)) {
        if (!std::filesystem::exists(single_path, ec)) {
            return base::error(ErrorCode::kNotFound, "{}: neither {} nor {} found",
                               model_dir.string(), kSingleFileName, kIndexFileName);
        }
        QVL_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(single_path));
        for (std::size_t t = 0; t < file.tensors().size(); ++t) {
            store.index_.emplace(file.tensors()[t].name, std::pair{std::size_t(0), t});
        }
        store.files_.push_back(std::move(file));
        return store;
    }

    const std::string index_name = index_path.string();
    QVL_ASSIGN_OR_RETURN(JsonValue index, read_json_file(index_path));
    const JsonValue* weight_map = index.find("weight_map");
    if (weight_map == nullptr || !weight_map->is_object()) {
        return base::error(ErrorCode::kCorruptFile, "{}: missing 'weight_map' object", index_name);
    }
    ShardNumbers shard_of_name;
    QVL_TRY(open_shards(model_dir, index_name, *weight_map, &store.files_, &shard_of_name));
    QVL_TRY(bind_listed(index_name, *weight_map, store.files_, shard_of_name, &store.index_));
    QVL_TRY(bind_unlisted(model_dir, store.files_, &store.index_));
    return store;
}

const TensorInfo* TensorStore::find(std::string_view name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) return nullptr;
    return &files_[it->second.first].tensors()[it->second.second];
}

const std::filesystem::path* TensorStore::file_of(std::string_view name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) return nullptr;
    return &files_[it->second.first].path();
}

std::uint64_t TensorStore::total_bytes() const {
    std::uint64_t total = 0;
    for (const SafetensorsFile& f : files_) total += f.size_bytes();
    return total;
}

}  // namespace qvl::io
