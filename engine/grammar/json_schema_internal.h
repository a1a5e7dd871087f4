// Pieces of the JSON-schema compiler (json_schema.cpp) that build scalar grammars: literals,
// integer and number ranges, string formats, regular-expression patterns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "io/json.h"

namespace qvl::grammar::detail {

// The largest magnitude an unbounded integer or number part may reach (15 digits).
inline constexpr std::int64_t kMaxMagnitude = 999999999999999;

// The GBNF rules every schema grammar may use: ws, value, object, array, string, char, number,
// integer, boolean, null.
std::string_view primitive_rules();

// A compact JSON serialization of v (for const and enum).
std::string json_text(const io::JsonValue& v);

// A GBNF expression for the integers in [lo, hi] (decimal, no leading zeros).
std::string integer_range(std::int64_t lo, std::int64_t hi);
// A GBNF expression for the numbers in [lo, hi] with integral bounds (no exponent).
std::string number_range(std::int64_t lo, std::int64_t hi);

// A GBNF expression for a string (quotes included) in the given format, or "" when the format
// is only an annotation.
std::string string_format(std::string_view format);

// A GBNF expression for a JSON string (quotes included) whose content matches the regular
// expression (anchored or not, it must match the whole content).
base::Result<std::string> pattern_string(std::string_view pattern);

}  // namespace qvl::grammar::detail
