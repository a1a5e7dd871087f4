// The grammar an answer must follow, from what a caller asks for: a JSON schema, a GBNF
// grammar, or any JSON object (the API's options, qvl-run's flags, the server's
// response_format all come here).
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"

namespace qvl::grammar {

struct OutputConstraint {
    std::string_view json_schema;  // JSON text of a schema
    std::string_view gbnf;         // a GBNF grammar with a `root` rule
    bool json_object = false;      // any JSON object
};

// nullptr when nothing is asked; an error (naming the problem) when more than one is, or when
// the schema or grammar is refused.
base::Result<std::shared_ptr<const Grammar>> compile_output_grammar(const OutputConstraint& c);

}  // namespace qvl::grammar
