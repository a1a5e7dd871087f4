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

// The node a "#/a/b" reference names in root (~1 for '/', ~0 for '~'), or nullptr with why
// set to "is not a JSON pointer" or "points to nothing".
const io::JsonValue* resolve_pointer(const io::JsonValue& root, std::string_view target,
                                     std::string_view* why = nullptr);

// Whether no value can match both schemas (a conservative answer: false when unsure). Different
// JSON types, different const/enum values, and objects told apart by a required property
// (different constants, or one the other's closed properties do not allow) are recognised.
bool surely_disjoint(const io::JsonValue& root, const io::JsonValue& a, const io::JsonValue& b);

}  // namespace qvl::grammar::detail
