// JSON Schema to GBNF (grammar/gbnf.h), for response_format json_schema, tool arguments and
// qvl-run --json-schema. Supported: type (and type lists), properties / required /
// additionalProperties (objects keep the schema's property order; optional properties may be
// left out), items / prefixItems / minItems / maxItems, minLength / maxLength, enum, const,
// pattern (a regular-expression subset: literals, classes, \d \w \s, groups, |, ? * + {m,n}),
// format date / time / date-time / uuid (other formats are annotations, as JSON Schema says),
// integer and number bounds (minimum, maximum; exclusive ones for integers), anyOf / oneOf,
// a one-element allOf, $ref into $defs / definitions, nesting to any depth. Annotations
// (title, description, examples, default, $schema, $id, $comment, readOnly, writeOnly,
// deprecated, discriminator) change nothing. Any other keyword is an error naming it and where.
//
// The output is bounded where the schema is: whitespace between tokens is at most a newline and
// 20 indentation characters (or one space), and numbers have at most 15 digits before and 15
// after the point, so a schema whose strings and arrays are bounded always ends.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "io/json.h"

namespace qvl::grammar {

base::Result<std::string> json_schema_to_gbnf(const io::JsonValue& schema);
base::Result<std::string> json_schema_to_gbnf(std::string_view schema_text);

// The rules of one schema under the start rule `name`, its helper rules named "name-...", so that
// several schemas can share one grammar (tool arguments); the grammar must also hold the
// primitive rules below, once.
base::Result<std::string> json_schema_rules(const io::JsonValue& schema, std::string_view name);
// The rules every schema's rules use: ws, value, object, array, string, char, number, integer,
// boolean, null (and their helpers).
std::string_view json_primitive_rules();

// Any JSON object (response_format json_object).
std::string json_object_gbnf();

// A GBNF string literal matching exactly `utf8` (quotes, backslashes and controls escaped).
std::string gbnf_literal(std::string_view utf8);

}  // namespace qvl::grammar
