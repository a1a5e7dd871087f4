// Whether two JSON schemas can match the same value, for `oneOf`: a grammar cannot forbid a
// value that matches two branches, so `oneOf` compiles to the grammar of `anyOf` only when its
// branches exclude each other, which this decides conservatively ("maybe overlap" unless a
// reason is found): different JSON types, different const/enum values, or objects told apart
// by a required property (different constants, or absent from the other's closed properties).
// That covers the discriminated unions Pydantic emits.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "grammar/json_schema_internal.h"

namespace qvl::grammar::detail {

namespace {

using io::JsonValue;

// The kinds of JSON value a schema may match, as bits.
enum Kind : unsigned {
    kNull = 1,
    kBool = 2,
    kInteger = 4,   // numbers with an integral value
    kFraction = 8,  // the other numbers
    kString = 16,
    kArray = 32,
    kObject = 64,
    kAny = 127,
};

// $ref chains and nesting are followed this deep before answering "maybe".
constexpr int kMaxHops = 32;

const JsonValue* resolved(const JsonValue& root, const JsonValue* s, int hops) {
    for (; s != nullptr && hops < kMaxHops; ++hops) {
        const JsonValue* ref = s->is_object() ? s->find("$ref") : nullptr;
        if (ref == nullptr) return s;
        if (!ref->is_string()) return nullptr;
        s = resolve_pointer(root, ref->as_string());
    }
    return nullptr;
}

unsigned kind_of_value(const JsonValue& v) {
    if (v.is_null()) return kNull;
    if (v.is_bool()) return kBool;
    if (v.is_number()) {
        const double d = v.as_double();
        return std::isfinite(d) && std::floor(d) == d ? kInteger : kFraction;
    }
    if (v.is_string()) return kString;
    return v.is_array() ? kArray : kObject;
}

unsigned kind_of_type(const std::string& t) {
    if (t == "null") return kNull;
    if (t == "boolean") return kBool;
    if (t == "integer") return kInteger;
    if (t == "number") return kInteger | kFraction;
    if (t == "string") return kString;
    if (t == "array") return kArray;
    return t == "object" ? kObject : kAny;
}

// The const/enum values of s as compact JSON, or false when s has none.
bool values_of(const JsonValue& s, std::set<std::string>& out) {
    if (const JsonValue* c = s.find("const")) {
        out.insert(json_text(*c));
        return true;
    }
    const JsonValue* e = s.find("enum");
    if (e == nullptr || !e->is_array()) return false;
    for (const JsonValue& v : e->items()) out.insert(json_text(v));
    return true;
}

unsigned kinds(const JsonValue& root, const JsonValue* s, int hops) {
    s = resolved(root, s, hops);
    if (s == nullptr || hops >= kMaxHops) return kAny;
    if (s->is_bool()) return s->as_bool() ? unsigned(kAny) : 0u;
    if (!s->is_object()) return kAny;
    if (const JsonValue* c = s->find("const")) return kind_of_value(*c);
    if (const JsonValue* e = s->find("enum"); e != nullptr && e->is_array()) {
        unsigned k = 0;
        for (const JsonValue& v : e->items()) k |= kind_of_value(v);
        return k;
    }
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
        const JsonValue* list = s->find(key);
        if (list == nullptr || !list->is_array()) continue;
        unsigned k = 0;
        for (const JsonValue& branch : list->items()) k |= kinds(root, &branch, hops + 1);
        return k;
    }
    const JsonValue* t = s->find("type");
    if (t == nullptr) {
        // What the compiler infers from the keywords (json_schema.cpp typed()).
        if (s->find("properties") || s->find("additionalProperties") || s->find("required"))
            return kObject;
        if (s->find("items") || s->find("prefixItems")) return kArray;
        if (s->find("pattern") || s->find("minLength") || s->find("maxLength") || s->find("format"))
            return kString;
        return kAny;
    }
    if (t->is_string()) return kind_of_type(t->as_string());
    unsigned k = 0;
    for (const JsonValue& item : t->items())
        k |= item.is_string() ? kind_of_type(item.as_string()) : kAny;
    return k;
}

bool required(const JsonValue& s, const std::string& name) {
    const JsonValue* r = s.find("required");
    if (r == nullptr || !r->is_array()) return false;
    for (const JsonValue& item : r->items()) {
        if (item.is_string() && item.as_string() == name) return true;
    }
    return false;
}

// Object schema b cannot hold a property called name.
bool forbids(const JsonValue& b, const std::string& name) {
    const JsonValue* extra = b.find("additionalProperties");
    const JsonValue* props = b.find("properties");
    const bool closed = extra != nullptr && extra->is_bool() && !extra->as_bool();
    return closed && (props == nullptr || props->find(name) == nullptr);
}

bool disjoint_at(const JsonValue& root, const JsonValue* a, const JsonValue* b, int hops);

// Both only objects: a property required by a that b forbids or that both require with schemas
// that exclude each other.
bool objects_disjoint(const JsonValue& root, const JsonValue& a, const JsonValue& b, int hops) {
    const JsonValue* props = a.find("properties");
    const JsonValue* required_a = a.find("required");
    if (required_a == nullptr || !required_a->is_array()) return false;
    for (const JsonValue& item : required_a->items()) {
        if (!item.is_string()) continue;
        const std::string& name = item.as_string();
        if (forbids(b, name)) return true;
        const JsonValue* pb = b.find("properties");
        if (!required(b, name) || props == nullptr || pb == nullptr) continue;
        if (disjoint_at(root, props->find(name), pb->find(name), hops + 1)) return true;
    }
    return false;
}

bool disjoint_at(const JsonValue& root, const JsonValue* a, const JsonValue* b, int hops) {
    if (hops >= kMaxHops) return false;
    a = resolved(root, a, hops);
    b = resolved(root, b, hops);
    if (a == nullptr || b == nullptr) return false;
    const unsigned ka = kinds(root, a, hops), kb = kinds(root, b, hops);
    if ((ka & kb) == 0) return true;
    if (!a->is_object() || !b->is_object()) return false;
    std::set<std::string> va, vb;
    if (values_of(*a, va) && values_of(*b, vb)) {
        for (const std::string& v : va) {
            if (vb.count(v) != 0) return false;
        }
        return true;
    }
    if (ka == kObject && kb == kObject) {
        return objects_disjoint(root, *a, *b, hops) || objects_disjoint(root, *b, *a, hops);
    }
    return false;
}

}  // namespace

const io::JsonValue* resolve_pointer(const io::JsonValue& root, std::string_view target,
                                     std::string_view* why) {
    std::string_view unused;
    std::string_view& reason = why != nullptr ? *why : unused;
    reason = "is not a JSON pointer";
    if (target.empty() || target[0] != '#') return nullptr;
    const JsonValue* node = &root;
    std::size_t i = 1;
    while (i < target.size() && node != nullptr) {
        if (target[i] != '/') return nullptr;
        const std::size_t next = std::min(target.find('/', i + 1), target.size());
        std::string key;
        for (std::size_t p = i + 1; p < next; ++p) {
            const bool escaped = target[p] == '~' && p + 1 < next;
            key += !escaped ? target[p] : target[p + 1] == '1' ? '/' : '~';
            p += escaped ? 1 : 0;
        }
        node = node->find(key);
        i = next;
    }
    reason = "points to nothing";
    return node;
}

bool surely_disjoint(const io::JsonValue& root, const io::JsonValue& a, const io::JsonValue& b) {
    return disjoint_at(root, &a, &b, 0);
}

}  // namespace qvl::grammar::detail
