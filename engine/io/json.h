// A small read-only JSON document model (qvl::JsonValue of the public header), filled by
// simdjson (the one includer of simdjson is json.cpp). Objects keep their members in file
// order, duplicates included, so callers that must reject duplicate keys (safetensors headers)
// can see them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "qvl/qvl.h"

namespace qvl::io {

// The document type is the public header's (programs read JSON with the same class).
using JsonValue = qvl::JsonValue;

// Parses text; `what` (usually a file name) prefixes error messages.
base::Result<JsonValue> parse_json(std::string_view text, std::string_view what);

// Reads and parses a whole file. Missing file: kNotFound; unreadable: kIo; bad JSON: kCorruptFile.
base::Result<JsonValue> read_json_file(const std::filesystem::path& path);

// Reads a whole file into a string (kNotFound / kIo on failure). max_bytes bounds the size.
base::Result<std::string> read_text_file(const std::filesystem::path& path,
                                         std::uint64_t max_bytes = std::uint64_t(1) << 30);

}  // namespace qvl::io
