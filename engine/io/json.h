// A small read-only JSON document model, filled by simdjson (the one includer of simdjson is
// json.cpp). Objects keep their members in file order, duplicates included, so callers that
// must reject duplicate keys (safetensors headers) can see them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace qvl::io {

class JsonValue {
  public:
    enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
    using Member = std::pair<std::string, JsonValue>;

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::kNull; }
    bool is_bool() const { return type_ == Type::kBool; }
    bool is_number() const { return type_ == Type::kNumber; }
    bool is_string() const { return type_ == Type::kString; }
    bool is_array() const { return type_ == Type::kArray; }
    bool is_object() const { return type_ == Type::kObject; }
    // A number written without fraction or exponent that fits int64.
    bool is_integer() const { return type_ == Type::kNumber && is_integer_; }

    bool as_bool() const { return bool_; }
    double as_double() const { return number_; }
    std::int64_t as_int() const { return integer_; }
    const std::string& as_string() const { return string_; }
    const std::vector<JsonValue>& items() const { return items_; }
    const std::vector<Member>& members() const { return members_; }

    // First member named key, or nullptr (also for non-objects).
    const JsonValue* find(std::string_view key) const;

    static const char* type_name(Type type);

  private:
    friend class JsonBuilder;
    Type type_ = Type::kNull;
    bool bool_ = false;
    bool is_integer_ = false;
    double number_ = 0.0;
    std::int64_t integer_ = 0;
    std::string string_;
    std::vector<JsonValue> items_;
    std::vector<Member> members_;
};

// Parses text; `what` (usually a file name) prefixes error messages.
base::Result<JsonValue> parse_json(std::string_view text, std::string_view what);

// Reads and parses a whole file. Missing file: kNotFound; unreadable: kIo; bad JSON: kCorruptFile.
base::Result<JsonValue> read_json_file(const std::filesystem::path& path);

// Reads a whole file into a string (kNotFound / kIo on failure). max_bytes bounds the size.
base::Result<std::string> read_text_file(const std::filesystem::path& path,
                                         std::uint64_t max_bytes = std::uint64_t(1) << 30);

}  // namespace qvl::io
