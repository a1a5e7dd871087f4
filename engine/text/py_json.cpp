#include "text/py_json.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string_view>
#include <unordered_map>

namespace qvl::text {

namespace {

// json.dumps' string escaping with ensure_ascii=False: quote, backslash and the controls below
// U+0020 (\n \r \t \b \f short, the rest \u00xx in lower-case hex); everything else verbatim.
void append_string(std::string& out, std::string_view s) {
    out += '"';
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20) {
                    out += fmt::format("\\u{:04x}", unsigned(c));
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

void append_value(std::string& out, const io::JsonValue& v);

// A Python dict built from the pairs: a repeated key keeps its first position, takes its last
// value.
void append_object(std::string& out, const io::JsonValue& v) {
    const auto& members = v.members();
    std::unordered_map<std::string_view, std::size_t> last;
    last.reserve(members.size());
    for (std::size_t i = 0; i < members.size(); ++i) last[members[i].first] = i;
    out += '{';
    bool first = true;
    for (std::size_t i = 0; i < members.size(); ++i) {
        const auto it = last.find(members[i].first);
        if (it == last.end()) continue;  // already written at its first position
        if (!first) out += ", ";
        first = false;
        append_string(out, members[i].first);
        out += ": ";
        append_value(out, members[it->second].second);
        last.erase(it);
    }
    out += '}';
}

void append_value(std::string& out, const io::JsonValue& v) {
    switch (v.type()) {
        case io::JsonValue::Type::kNull:
            out += "null";
            break;
        case io::JsonValue::Type::kBool:
            out += v.as_bool() ? "true" : "false";
            break;
        case io::JsonValue::Type::kNumber:
            if (v.is_integer()) {
                out += std::to_string(v.as_int());
            } else {
                // Integers past int64 carry their digits; Python prints them exactly.
                out += v.as_string().empty() ? python_float_repr(v.as_double()) : v.as_string();
            }
            break;
        case io::JsonValue::Type::kString:
            append_string(out, v.as_string());
            break;
        case io::JsonValue::Type::kArray: {
            out += '[';
            for (std::size_t i = 0; i < v.items().size(); ++i) {
                if (i > 0) out += ", ";
                append_value(out, v.items()[i]);
            }
            out += ']';
            break;
        }
        case io::JsonValue::Type::kObject:
            append_object(out, v);
            break;
    }
}

}  // namespace

std::string python_float_repr(double v) {
    if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
    // Shortest round-trip digits in scientific form, e.g. "-1.25e+02", then laid out by
    // Python's rule (float_repr_style 'short', repr mode).
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
    const std::string_view sci(buf, std::size_t(r.ptr - buf));
    const std::size_t e = sci.find('e');
    std::string_view mant = sci.substr(0, e);
    const int exp10 = std::stoi(std::string(sci.substr(e + 1)));
    std::string out;
    if (mant.front() == '-') {
        out += '-';
        mant.remove_prefix(1);
    }
    std::string digits;
    for (const char c : mant) {
        if (c != '.') digits += c;
    }
    const int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
    const auto n = int(digits.size());
    if (decpt <= -4 || decpt > 16) {
        out += digits.front();
        if (n > 1) out.append(".").append(digits, 1);
        out += fmt::format("e{}{:02d}", exp10 < 0 ? '-' : '+', std::abs(exp10));
    } else if (decpt <= 0) {
        out.append("0.").append(std::size_t(-decpt), '0').append(digits);
    } else if (decpt >= n) {
        out.append(digits).append(std::size_t(decpt - n), '0').append(".0");
    } else {
        out.append(digits, 0, std::size_t(decpt)).append(".").append(digits, std::size_t(decpt));
    }
    return out;
}

std::string python_json(const io::JsonValue& v) {
    std::string out;
    append_value(out, v);
    return out;
}

}  // namespace qvl::text
