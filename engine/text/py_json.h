// JSON text written as the chat template's `tojson` filter writes it: Hugging Face renders chat
// templates with `tojson` = Python's json.dumps(x, ensure_ascii=False) (default separators ", "
// and ": ", keys in the order given, non-ASCII kept, floats as Python's repr). The tools block
// and a tool call's arguments given as an object go through it, so the prompt's token ids
// match apply_chat_template's only if this text matches json.dumps byte for byte.
#pragma once

#include <string>

#include "io/json.h"

namespace qvl::text {

// v as json.dumps(v, ensure_ascii=False) writes the Python value json.loads would give:
// an object's duplicate keys keep the first key's position with the last value (a dict),
// integers as written (those past int64 come as doubles from the parser and are written as
// Python floats, the one difference from Python's unbounded ints).
std::string python_json(const io::JsonValue& v);

// A finite double as Python's repr(float): the shortest round-trip digits, fixed notation for
// decimal exponents -4..15 with ".0" when integral ("2.0", "0.0001"), otherwise scientific with
// a signed two-digit-minimum exponent ("1e-05", "1e+16", "1.5e+300").
std::string python_float_repr(double v);

}  // namespace qvl::text
