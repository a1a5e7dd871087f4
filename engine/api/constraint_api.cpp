// qvl::OutputConstraint of the public header: a compiled grammar (engine/grammar) shared by
// every request that carries it.
#include "api/convert.h"
#include "api/internals.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

namespace qvl {
namespace {

Result<OutputConstraint> compiled(base::Result<std::string> gbnf) {
    if (!gbnf.ok()) return api::from_engine(gbnf.status());
    base::Result<grammar::Grammar> g = grammar::parse_gbnf(gbnf.value());
    if (!g.ok()) return api::from_engine(g.status());
    return OutputConstraint(std::make_shared<const OutputConstraint::Impl>(OutputConstraint::Impl{
        .grammar = std::make_shared<const grammar::Grammar>(std::move(g).value())}));
}

}  // namespace

OutputConstraint::OutputConstraint() = default;
OutputConstraint::OutputConstraint(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

bool OutputConstraint::triggered() const { return impl_ != nullptr && !impl_->trigger.empty(); }

Result<OutputConstraint> OutputConstraint::json_object() {
    return compiled(grammar::json_object_gbnf());
}

Result<OutputConstraint> OutputConstraint::json_schema(std::string_view schema_json) {
    return compiled(grammar::json_schema_to_gbnf(schema_json));
}

Result<OutputConstraint> OutputConstraint::json_schema(const JsonValue& schema) {
    return compiled(grammar::json_schema_to_gbnf(schema));
}

Result<OutputConstraint> OutputConstraint::gbnf(std::string_view grammar) {
    return compiled(std::string(grammar));
}

}  // namespace qvl
