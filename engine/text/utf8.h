// UTF-8 helpers for the tokenizer (internal to engine/model): strict validation and the lossy
// conversion used by decode. "Valid" means Unicode's well-formed UTF-8 (Table 3-7): no overlong
// forms, no surrogates, nothing above U+10FFFF.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace qvl::text::detail {

// Offset of the first byte that does not start a well-formed sequence (a truncated sequence at
// the end counts), or std::string_view::npos when all of `text` is well-formed.
std::size_t find_invalid_utf8(std::string_view text);

// Appends `bytes` to `out`, replacing each maximal ill-formed subpart by U+FFFD (the Unicode
// "substitution of maximal subparts" practice, as Python's errors="replace" and Rust's
// from_utf8_lossy do). When !final, a trailing incomplete but so-far valid sequence is not
// consumed. Returns the number of bytes consumed (== bytes.size() when final).
std::size_t append_utf8_lossy(std::string& out, std::string_view bytes, bool final);

// Appends the UTF-8 encoding of a scalar value (cp <= 0x10FFFF, not a surrogate).
void append_codepoint(std::string& out, char32_t cp);

}  // namespace qvl::text::detail
