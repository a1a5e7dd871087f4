#include "response_format.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace qvl::serve {

namespace {

Status bad(std::string_view where, std::string_view what) {
    return Status(ErrorCode::kInvalidArgument, fmt::format("{}: {}", where, what));
}

Status compiled(Result<OutputConstraint> c, std::string_view where, OutputConstraint* out) {
    if (!c.ok()) return bad(where, c.status().message());
    *out = std::move(c).value();
    return {};
}

}  // namespace

Status parse_response_format(const JsonValue& root, OutputConstraint* out) {
    const JsonValue* rf = root.find("response_format");
    if (rf == nullptr || rf->is_null()) return {};
    if (!rf->is_object()) return bad("response_format", "must be an object");
    const JsonValue* type = rf->find("type");
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
    if (t == "json_object")
        return compiled(OutputConstraint::json_object(), "response_format", out);
    if (t != "json_schema") {
        return bad("response_format.type",
                   fmt::format("'{}' is not \"text\", \"json_object\" or \"json_schema\"", t));
    }
    const JsonValue* js = rf->find("json_schema");
    if (js == nullptr || !js->is_object()) {
        return bad("response_format.json_schema", "must be an object with a \"schema\"");
    }
    for (const auto& [key, value] : js->members()) {
        if (key != "name" && key != "schema" && key != "strict" && key != "description") {
            return bad("response_format.json_schema." + key, "is not a json_schema field");
        }
    }
    const JsonValue* schema = js->find("schema");
    if (schema == nullptr) return bad("response_format.json_schema.schema", "is missing");
    return compiled(OutputConstraint::json_schema(*schema), "response_format.json_schema.schema",
                    out);
}

}  // namespace qvl::serve
