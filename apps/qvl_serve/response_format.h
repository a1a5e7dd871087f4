// The request's response_format (OpenAI structured outputs): {"type": "text"} (no constraint),
// {"type": "json_object"} (any JSON object) or {"type": "json_schema", "json_schema": {"name",
// "schema", "strict", "description"}} (JSON valid against the schema), compiled to the grammar
// the engine decodes under (qvl::OutputConstraint). A schema feature the compiler does not
// support is a 400 naming it.
#pragma once

#include <qvl/qvl.h>

namespace qvl::serve {

// Reads root's response_format into *out (left empty for text or absent); errors name the field.
Status parse_response_format(const JsonValue& root, OutputConstraint* out);

}  // namespace qvl::serve
