// GBNF (llama.cpp's grammar format) to Grammar. Accepted: `name ::= alternatives` rules
// (newlines free; a rule ends where the next `name ::=` starts), `|` alternation, sequences,
// `( ... )` groups, postfix `?` `*` `+` `{m}` `{m,}` `{m,n}`, string literals and character
// classes (`[a-z0-9_]`, `[^"\\]`) with the escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH
// \UHHHHHHHH, `.` for any character, and `#` comments. The start rule is `root`.
// Errors name the line and column; sizes are bounded (grammar.h: kMaxElems, kMaxRepeat,
// kMaxNesting).
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"

namespace qvl::grammar {

base::Result<Grammar> parse_gbnf(std::string_view text, std::string_view root = "root");

}  // namespace qvl::grammar
