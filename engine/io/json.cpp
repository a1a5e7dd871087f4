#include "io/json.h"

#include <simdjson.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace qvl {

const JsonValue* JsonValue::find(std::string_view key) const {
    for (const Member& m : members_) {
        if (m.first == key) return &m.second;
    }
    return nullptr;
}

const char* JsonValue::type_name(Type type) {
    switch (type) {
        case Type::kNull:
            return "null";
        case Type::kBool:
            return "a boolean";
        case Type::kNumber:
            return "a number";
        case Type::kString:
            return "a string";
        case Type::kArray:
            return "an array";
        case Type::kObject:
            return "an object";
    }
    return "?";
}

// The one writer of JsonValue's fields (a friend of the class).
class JsonBuilder {
  public:
    static JsonValue build(simdjson::dom::element e) {
        JsonValue v;
        switch (e.type()) {
            case simdjson::dom::element_type::ARRAY: {
                v.type_ = JsonValue::Type::kArray;
                simdjson::dom::array arr = e.get_array().value_unsafe();
                v.items_.reserve(arr.size());
                for (simdjson::dom::element item : arr) v.items_.push_back(build(item));
                break;
            }
            case simdjson::dom::element_type::OBJECT: {
                v.type_ = JsonValue::Type::kObject;
                simdjson::dom::object obj = e.get_object().value_unsafe();
                v.members_.reserve(obj.size());
                for (simdjson::dom::key_value_pair kv : obj) {
                    v.members_.emplace_back(std::string(kv.key), build(kv.value));
                }
                break;
            }
            case simdjson::dom::element_type::INT64:
                v.type_ = JsonValue::Type::kNumber;
                v.is_integer_ = true;
                v.integer_ = e.get_int64().value_unsafe();
                v.number_ = double(v.integer_);
                break;
            case simdjson::dom::element_type::UINT64:
                // Past int64: a double, and its exact digits for writers that print integers
                // exactly (Python's json, which the chat template's tojson is).
                v.type_ = JsonValue::Type::kNumber;
                v.number_ = double(e.get_uint64().value_unsafe());
                v.string_ = std::to_string(e.get_uint64().value_unsafe());
                break;
            case simdjson::dom::element_type::DOUBLE:
                v.type_ = JsonValue::Type::kNumber;
                v.number_ = e.get_double().value_unsafe();
                break;
            case simdjson::dom::element_type::STRING:
                v.type_ = JsonValue::Type::kString;
                v.string_ = std::string(e.get_string().value_unsafe());
                break;
            case simdjson::dom::element_type::BOOL:
                v.type_ = JsonValue::Type::kBool;
                v.bool_ = e.get_bool().value_unsafe();
                break;
            case simdjson::dom::element_type::NULL_VALUE:
                break;
        }
        return v;
    }
};

}  // namespace qvl

namespace qvl::io {

using base::ErrorCode;

base::Result<JsonValue> parse_json(std::string_view text, std::string_view what) {
    simdjson::dom::parser parser;
    simdjson::padded_string padded(text);
    simdjson::dom::element root;
    const simdjson::error_code err = parser.parse(padded).get(root);
    if (err) {
        // The reader's number limits are narrower than JSON's: name them.
        const char* limits = err == simdjson::NUMBER_ERROR
                                 ? " (integers must lie in [-2^63, 2^64-1], other numbers "
                                   "within a double's range)"
                                 : "";
        return base::error(ErrorCode::kCorruptFile, "{}: invalid JSON: {}{}", what,
                           simdjson::error_message(err), limits);
    }
    return JsonBuilder::build(root);
}

base::Result<std::string> read_text_file(const std::filesystem::path& path,
                                         std::uint64_t max_bytes) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status)) {
        return base::error(ErrorCode::kNotFound, "{}: no such file", path.string());
    }
    if (std::filesystem::is_directory(status)) {
        return base::error(ErrorCode::kIo, "{}: is a directory, expected a file", path.string());
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return base::error(ErrorCode::kIo, "{}: cannot open: {}", path.string(),
                           std::strerror(errno));
    }
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < 0) return base::error(ErrorCode::kIo, "{}: cannot read", path.string());
    if (std::uint64_t(size) > max_bytes) {
        return base::error(ErrorCode::kOutOfRange, "{}: {} bytes is over the limit of {}",
                           path.string(), size, max_bytes);
    }
    std::string text(std::size_t(size), '\0');
    in.seekg(0);
    in.read(text.data(), size);
    if (!in) return base::error(ErrorCode::kIo, "{}: read failed", path.string());
    return text;
}

base::Result<JsonValue> read_json_file(const std::filesystem::path& path) {
    QVL_ASSIGN_OR_RETURN(std::string text, read_text_file(path, std::uint64_t(256) << 20));
    return parse_json(text, path.string());
}

}  // namespace qvl::io
