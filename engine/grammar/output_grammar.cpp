#include "grammar/output_grammar.h"

#include <string>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

namespace qvl::grammar {

base::Result<std::shared_ptr<const Grammar>> compile_output_grammar(const OutputConstraint& c) {
    const int asked = int(!c.json_schema.empty()) + int(!c.gbnf.empty()) + int(c.json_object);
    if (asked == 0) return std::shared_ptr<const Grammar>();
    if (asked > 1) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "a JSON schema, a grammar and a JSON object are exclusive: ask for one");
    }
    std::string text;
    if (!c.gbnf.empty()) {
        text = std::string(c.gbnf);
    } else if (c.json_object) {
        text = json_object_gbnf();
    } else {
        QVL_ASSIGN_OR_RETURN(text, json_schema_to_gbnf(c.json_schema));
    }
    QVL_ASSIGN_OR_RETURN(Grammar g, parse_gbnf(text));
    return std::shared_ptr<const Grammar>(std::make_shared<Grammar>(std::move(g)));
}

}  // namespace qvl::grammar
