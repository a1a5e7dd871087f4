#include "grammar/json_schema.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_schema_internal.h"
#include "io/json_write.h"

namespace qvl::grammar {

namespace {

using base::ErrorCode;
using detail::kMaxMagnitude;
using io::JsonValue;

constexpr int kMaxDepth = 128;

const std::set<std::string, std::less<>> kAnnotations = {
    "title",    "description", "examples",   "default",       "$schema", "$id",         "$comment",
    "readOnly", "writeOnly",   "deprecated", "discriminator", "$defs",   "definitions", "strict"};

const std::set<std::string, std::less<>> kKeywords = {"type",
                                                      "properties",
                                                      "required",
                                                      "additionalProperties",
                                                      "items",
                                                      "prefixItems",
                                                      "minItems",
                                                      "maxItems",
                                                      "minLength",
                                                      "maxLength",
                                                      "enum",
                                                      "const",
                                                      "pattern",
                                                      "format",
                                                      "minimum",
                                                      "maximum",
                                                      "exclusiveMinimum",
                                                      "exclusiveMaximum",
                                                      "anyOf",
                                                      "oneOf",
                                                      "allOf",
                                                      "$ref",
                                                      "uniqueItems"};

class Compiler {
  public:
    // prefix starts every helper rule's name, so that several schemas can share a grammar.
    Compiler(const JsonValue& root, std::string prefix) : root_(root), prefix_(std::move(prefix)) {}

    // The rules, the schema's own under the start rule `start` (the primitives not included).
    base::Result<std::string> run(std::string_view start) {
        QVL_ASSIGN_OR_RETURN(std::string expr, visit(root_, "#", 0));
        return fmt::format("{} ::= {}\n{}", start, expr, rules_);
    }

  private:
    base::Status fail(std::string_view where, std::string_view what) const {
        return base::error(ErrorCode::kUnsupported, "JSON schema at '{}': {}", where, what);
    }

    std::string add_rule(std::string_view expr) {
        std::string name = fresh_name('s');
        rules_ += name + " ::= " + std::string(expr) + "\n";
        return name;
    }

    base::Result<std::string> visit(const JsonValue& s, const std::string& at, int depth) {
        if (depth > kMaxDepth) return fail(at, fmt::format("nested deeper than {}", kMaxDepth));
        if (s.is_bool()) {
            if (s.as_bool()) return std::string("value");
            return fail(at, "the schema 'false' matches nothing");
        }
        if (!s.is_object()) return fail(at, "a schema must be an object or a boolean");
        for (const auto& [key, v] : s.members()) {
            if (kAnnotations.count(key) == 0 && kKeywords.count(key) == 0) {
                return fail(at, fmt::format("unsupported keyword '{}'", key));
            }
        }
        if (const JsonValue* u = s.find("uniqueItems");
            u != nullptr && !(u->is_bool() && !u->as_bool())) {
            return fail(at, "unsupported keyword 'uniqueItems'");
        }
        if (const JsonValue* ref = s.find("$ref")) return reference(*ref, at, depth);
        if (const JsonValue* c = s.find("const")) return gbnf_literal(detail::json_text(*c));
        if (const JsonValue* e = s.find("enum")) return enumeration(*e, at);
        for (const char* key : {"anyOf", "oneOf", "allOf"}) {
            if (const JsonValue* list = s.find(key)) return combination(s, key, *list, at, depth);
        }
        return typed(s, at, depth);
    }

    base::Result<std::string> enumeration(const JsonValue& e, const std::string& at) {
        if (!e.is_array() || e.items().empty()) return fail(at, "'enum' must be a non-empty array");
        std::string out = "(";
        for (std::size_t i = 0; i < e.items().size(); ++i) {
            out += (i > 0 ? " | " : " ") + gbnf_literal(detail::json_text(e.items()[i]));
        }
        return add_rule(out + " )");
    }

    base::Result<std::string> combination(const JsonValue& s, const char* key,
                                          const JsonValue& list, const std::string& at, int depth) {
        for (const char* other : {"type", "properties", "items", "enum", "const"}) {
            if (s.find(other) != nullptr) {
                return fail(at, fmt::format("'{}' beside '{}' is not supported", other, key));
            }
        }
        if (!list.is_array() || list.items().empty()) {
            return fail(at, fmt::format("'{}' must be a non-empty array", key));
        }
        if (std::string_view(key) == "allOf" && list.items().size() != 1) {
            return fail(at, "'allOf' with more than one schema is not supported");
        }
        std::string out = "(";
        for (std::size_t i = 0; i < list.items().size(); ++i) {
            QVL_ASSIGN_OR_RETURN(
                std::string alt,
                visit(list.items()[i], fmt::format("{}/{}/{}", at, key, i), depth + 1));
            out += (i > 0 ? " | " : " ") + alt;
        }
        if (std::string_view(key) == "oneOf") QVL_TRY(exclusive(list, at));
        return add_rule(out + " )");
    }

    // oneOf is anyOf's grammar when no value can match two branches (a grammar cannot forbid
    // matching both).
    base::Status exclusive(const JsonValue& list, const std::string& at) const {
        const std::vector<JsonValue>& branches = list.items();
        for (std::size_t i = 0; i < branches.size(); ++i) {
            for (std::size_t j = i + 1; j < branches.size(); ++j) {
                if (detail::surely_disjoint(root_, branches[i], branches[j])) continue;
                return fail(at, fmt::format("'oneOf' branches {} and {} may both match a value, "
                                            "which a grammar cannot forbid; branches must differ "
                                            "in type, in const/enum values or in a required "
                                            "property's const (else use 'anyOf')",
                                            i, j));
            }
        }
        return {};
    }

    base::Result<std::string> reference(const JsonValue& ref, const std::string& at, int depth) {
        if (!ref.is_string()) return fail(at, "'$ref' must be a string");
        const std::string& target = ref.as_string();
        if (auto it = refs_.find(target); it != refs_.end()) return it->second;
        if (target.empty() || target[0] != '#') {
            return fail(
                at,
                fmt::format("'$ref' '{}': only references into this document (#...) are supported",
                            target));
        }
        std::string_view why;
        const JsonValue* node = detail::resolve_pointer(root_, target, &why);
        if (node == nullptr) return fail(at, fmt::format("'$ref' '{}' {}", target, why));
        // Named before it is compiled, so recursive schemas refer to the rule itself.
        const std::string name = fresh_name('r');
        refs_[target] = name;
        QVL_ASSIGN_OR_RETURN(std::string expr, visit(*node, target, depth + 1));
        rules_ += name + " ::= " + expr + "\n";
        return name;
    }

    base::Result<std::string> typed(const JsonValue& s, const std::string& at, int depth) {
        std::vector<std::string> types;
        if (const JsonValue* t = s.find("type")) {
            if (t->is_string()) types.push_back(t->as_string());
            for (const JsonValue& item : t->items()) {
                if (!item.is_string()) return fail(at, "'type' lists strings only");
                types.push_back(item.as_string());
            }
            if (types.empty()) return fail(at, "'type' must be a string or a non-empty array");
        } else if (s.find("properties") || s.find("additionalProperties") || s.find("required")) {
            types.emplace_back("object");
        } else if (s.find("items") || s.find("prefixItems")) {
            types.emplace_back("array");
        } else if (s.find("pattern") || s.find("minLength") || s.find("maxLength") ||
                   s.find("format")) {
            types.emplace_back("string");
        } else {
            return std::string("value");
        }
        std::string out = "(";
        for (std::size_t i = 0; i < types.size(); ++i) {
            QVL_ASSIGN_OR_RETURN(std::string one, of_type(s, types[i], at, depth));
            out += (i > 0 ? " | " : " ") + one;
        }
        return types.size() == 1 ? out.substr(2) : add_rule(out + " )");
    }

    base::Result<std::string> of_type(const JsonValue& s, const std::string& type,
                                      const std::string& at, int depth) {
        if (type == "object") return object(s, at, depth);
        if (type == "array") return array(s, at, depth);
        if (type == "string") return string(s, at);
        if (type == "integer" || type == "number") return number(s, type == "integer", at);
        if (type == "boolean") return std::string("boolean");
        if (type == "null") return std::string("null");
        return fail(at, fmt::format("unknown type '{}'", type));
    }

    base::Result<int> count(const JsonValue& s, const char* key, int fallback,
                            const std::string& at) {
        const JsonValue* v = s.find(key);
        if (v == nullptr) return fallback;
        if (!v->is_integer() || v->as_int() < 0)
            return fail(at, fmt::format("'{}' must be a non-negative integer", key));
        if (v->as_int() > kMaxRepeat)
            return fail(at, fmt::format("'{}' over {} is not supported", key, kMaxRepeat));
        return int(v->as_int());
    }

    base::Result<std::string> string(const JsonValue& s, const std::string& at) {
        QVL_ASSIGN_OR_RETURN(const int min, count(s, "minLength", 0, at));
        QVL_ASSIGN_OR_RETURN(const int max, count(s, "maxLength", -1, at));
        if (max >= 0 && max < min) return fail(at, "'maxLength' below 'minLength'");
        const JsonValue* pattern = s.find("pattern");
        const JsonValue* format = s.find("format");
        if (pattern != nullptr) {
            if (!pattern->is_string()) return fail(at, "'pattern' must be a string");
            if (min > 0 || max >= 0)
                return fail(at, "'pattern' together with 'minLength'/'maxLength' is not supported");
            QVL_ASSIGN_OR_RETURN(std::string expr, detail::pattern_string(pattern->as_string()));
            return add_rule(expr);
        }
        if (format != nullptr && format->is_string()) {
            std::string expr = detail::string_format(format->as_string());
            if (!expr.empty()) return add_rule(expr);
        }
        if (min == 0 && max < 0) return std::string("string");
        return add_rule(max < 0 ? fmt::format("\"\\\"\" char{{{},}} \"\\\"\"", min)
                                : fmt::format("\"\\\"\" char{{{},{}}} \"\\\"\"", min, max));
    }

    base::Result<std::string> number(const JsonValue& s, bool integer, const std::string& at);
    base::Result<std::string> object(const JsonValue& s, const std::string& at, int depth);
    base::Result<std::string> array(const JsonValue& s, const std::string& at, int depth);

    std::string fresh_name(char kind) { return fmt::format("{}{}{}", prefix_, kind, n_rules_++); }

    const JsonValue& root_;
    std::string prefix_;
    std::string rules_;
    int n_rules_ = 0;
    std::map<std::string, std::string> refs_;
};

base::Result<std::string> Compiler::number(const JsonValue& s, bool integer,
                                           const std::string& at) {
    double lo = -double(kMaxMagnitude), hi = double(kMaxMagnitude);
    bool bounded = false;
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        const JsonValue* v = s.find(key);
        if (v == nullptr) continue;
        if (!v->is_number()) return fail(at, fmt::format("'{}' must be a number", key));
        const bool exclusive = key[0] == 'e',
                   lower = std::string_view(key).find("inimum") != std::string_view::npos;
        double b = v->as_double();
        if (!integer && (exclusive || b != std::floor(b))) {
            return fail(
                at,
                fmt::format("'{}' {} on a number is not supported (integral inclusive bounds are)",
                            key, b));
        }
        if (integer)
            b = lower ? std::ceil(b) + (exclusive && b == std::ceil(b) ? 1 : 0)
                      : std::floor(b) - (exclusive && b == std::floor(b) ? 1 : 0);
        bounded = true;
        if (lower)
            lo = std::max(lo, b);
        else
            hi = std::min(hi, b);
    }
    if (lo > hi) return fail(at, "the bounds leave no value");
    if (!bounded) return std::string(integer ? "integer" : "number");
    lo = std::max(lo, -double(kMaxMagnitude));
    hi = std::min(hi, double(kMaxMagnitude));
    return add_rule(integer ? detail::integer_range(std::int64_t(lo), std::int64_t(hi))
                            : detail::number_range(std::int64_t(lo), std::int64_t(hi)));
}

base::Result<std::string> Compiler::object(const JsonValue& s, const std::string& at, int depth) {
    const JsonValue* props = s.find("properties");
    const JsonValue* req = s.find("required");
    const JsonValue* extra = s.find("additionalProperties");
    if (props != nullptr && !props->is_object()) return fail(at, "'properties' must be an object");
    std::set<std::string> required;
    if (req != nullptr) {
        if (!req->is_array()) return fail(at, "'required' must be an array");
        for (const JsonValue& r : req->items()) {
            if (!r.is_string()) return fail(at, "'required' lists strings only");
            if (props == nullptr || props->find(r.as_string()) == nullptr) {
                return fail(at, fmt::format("required property '{}' is not in 'properties'",
                                            r.as_string()));
            }
            required.insert(r.as_string());
        }
    }
    std::string extra_kv;
    if (extra == nullptr || (extra->is_bool() && extra->as_bool()) || extra->is_object()) {
        std::string value = "value";
        if (extra != nullptr && extra->is_object()) {
            QVL_ASSIGN_OR_RETURN(value, visit(*extra, at + "/additionalProperties", depth + 1));
        }
        extra_kv = add_rule(fmt::format("string ws \":\" ws {} ws", value));
    } else if (!extra->is_bool()) {
        return fail(at, "'additionalProperties' must be a boolean or a schema");
    }
    // Chain rules: after[i][f] produces properties i.. (f: one was written, a comma comes first).
    const std::size_t n = props == nullptr ? 0 : props->members().size();
    const std::string base = fresh_name('o');
    auto name = [&](std::size_t i, int f) { return fmt::format("{}-{}-{}", base, i, f); };
    rules_ += name(n, 0) + " ::= " +
              (extra_kv.empty() ? "\"\"" : fmt::format("( {0} ( \",\" ws {0} )* )?", extra_kv)) +
              "\n";
    rules_ += name(n, 1) +
              " ::= " + (extra_kv.empty() ? "\"\"" : fmt::format("( \",\" ws {} )*", extra_kv)) +
              "\n";
    for (std::size_t i = n; i-- > 0;) {
        const auto& [key, schema] = props->members()[i];
        std::string path = at;
        path += "/properties/";
        path += key;
        QVL_ASSIGN_OR_RETURN(std::string value, visit(schema, path, depth + 1));
        const std::string kv =
            add_rule(fmt::format("{} ws \":\" ws {} ws", gbnf_literal(io::json_quote(key)), value));
        for (int f = 0; f < 2; ++f) {
            std::string rule =
                name(i, f) + " ::= " + (f ? "\",\" ws " : "") + kv + " " + name(i + 1, 1);
            if (required.count(key) == 0) rule += " | " + name(i + 1, f);
            rules_ += rule + "\n";
        }
    }
    return add_rule(fmt::format("\"{{\" ws {} \"}}\"", name(0, 0)));
}

base::Result<std::string> Compiler::array(const JsonValue& s, const std::string& at, int depth) {
    QVL_ASSIGN_OR_RETURN(int min, count(s, "minItems", 0, at));
    QVL_ASSIGN_OR_RETURN(int max, count(s, "maxItems", -1, at));
    if (max >= 0 && max < min) return fail(at, "'maxItems' below 'minItems'");
    const JsonValue* items = s.find("items");
    std::string item = "value";
    if (items != nullptr && !(items->is_bool() && !items->as_bool())) {
        QVL_ASSIGN_OR_RETURN(item, visit(*items, at + "/items", depth + 1));
    }
    std::string head;  // the prefixItems, each followed by ws
    int fixed = 0;
    if (const JsonValue* prefix = s.find("prefixItems")) {
        if (!prefix->is_array()) return fail(at, "'prefixItems' must be an array");
        fixed = int(prefix->items().size());
        if (min < fixed)
            return fail(at, "'prefixItems' with 'minItems' below their count is not supported");
        for (int i = 0; i < fixed; ++i) {
            QVL_ASSIGN_OR_RETURN(std::string p,
                                 visit(prefix->items()[std::size_t(i)],
                                       fmt::format("{}/prefixItems/{}", at, i), depth + 1));
            head += (i > 0 ? "\",\" ws " : "") + p + " ws ";
        }
        min -= fixed;
        if (max >= 0) max -= fixed;
    }
    if (items != nullptr && items->is_bool() && !items->as_bool()) max = 0;
    if (max >= 0 && max < min) return fail(at, "'maxItems' below the prefix items");
    std::string rest;
    if (max != 0) {
        const std::string sep = fixed > 0 ? "\",\" ws " : "";
        const std::string more =
            max < 0
                ? fmt::format("( \",\" ws {} ws ){{{},}}", item, std::max(min - 1, 0))
                : fmt::format("( \",\" ws {} ws ){{{},{}}}", item, std::max(min - 1, 0), max - 1);
        if (fixed > 0) {
            rest = max < 0 ? fmt::format("( \",\" ws {} ws ){{{},}}", item, min)
                           : fmt::format("( \",\" ws {} ws ){{{},{}}}", item, min, max);
        } else {
            rest = fmt::format("{}{} ws {}", sep, item, more);
            if (min == 0) rest = "( " + rest + " )?";
        }
    }
    return add_rule(fmt::format("\"[\" ws {}{} \"]\"", head, rest));
}

}  // namespace

base::Result<std::string> json_schema_to_gbnf(const io::JsonValue& schema) {
    QVL_ASSIGN_OR_RETURN(std::string rules, Compiler(schema, "").run("root"));
    return rules + std::string(detail::primitive_rules());
}

base::Result<std::string> json_schema_rules(const io::JsonValue& schema, std::string_view name) {
    return Compiler(schema, std::string(name) + "-").run(name);
}

std::string_view json_primitive_rules() { return detail::primitive_rules(); }

base::Result<std::string> json_schema_to_gbnf(std::string_view schema_text) {
    QVL_ASSIGN_OR_RETURN(io::JsonValue schema, io::parse_json(schema_text, "JSON schema"));
    return json_schema_to_gbnf(schema);
}

std::string json_object_gbnf() {
    return fmt::format("root ::= object\n{}", detail::primitive_rules());
}

}  // namespace qvl::grammar
