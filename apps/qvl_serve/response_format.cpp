#include "response_format.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

namespace qvl::serve {

namespace {

base::Status bad(std::string_view where, std::string_view what) {
    return base::Status(base::ErrorCode::kInvalidArgument, fmt::format("{}: {}", where, what));
}

base::Status compile(base::Result<std::string> gbnf, std::string_view where,
                     std::shared_ptr<const grammar::Grammar>* out) {
    if (!gbnf.ok()) return bad(where, gbnf.status().message());
    base::Result<grammar::Grammar> g = grammar::parse_gbnf(gbnf.value());
    if (!g.ok()) return bad(where, g.status().message());
    *out = std::make_shared<const grammar::Grammar>(std::move(g).value());
    return {};
}

}  // namespace

base::Status parse_response_format(const io::JsonValue& root,
                                   std::shared_ptr<const grammar::Grammar>* out) {
    const io::JsonValue* rf = root.find("response_format");
    if (rf == nullptr || rf->is_null()) return {};
    if (!rf->is_object()) return bad("response_format", "must be an object");
    const io::JsonValue* type = rf->find("type");
    if (type == nullptr || !type->is_string()) {
        return bad("response_format.type", "must be \"text\", \"json_object\" or \"json_schema\"");
    }
    for (const auto& [key, value] : rf->members()) {
        if (key != "type" && key != "json_schema" && !value.is_null()) {
            return bad("response_format." + key, "is not a response_format field");
        }
    }
    const std::string& t = type->as_string();
    if (t == "text") return {};
    if (t == "json_object") return compile(grammar::json_object_gbnf(), "response_format", out);
    if (t != "json_schema") {
        return bad("response_format.type",
                   fmt::format("'{}' is not \"text\", \"json_object\" or \"json_schema\"", t));
    }
    const io::JsonValue* js = rf->find("json_schema");
    if (js == nullptr || !js->is_object()) {
        return bad("response_format.json_schema", "must be an object with a \"schema\"");
    }
    for (const auto& [key, value] : js->members()) {
        if (key != "name" && key != "schema" && key != "strict" && key != "description") {
            return bad("response_format.json_schema." + key, "is not a json_schema field");
        }
    }
    const io::JsonValue* schema = js->find("schema");
    if (schema == nullptr) return bad("response_format.json_schema.schema", "is missing");
    return compile(grammar::json_schema_to_gbnf(*schema), "response_format.json_schema.schema",
                   out);
}

}  // namespace qvl::serve
