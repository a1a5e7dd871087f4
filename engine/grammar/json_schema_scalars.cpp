// Scalar grammars of the JSON-schema compiler: literals, numbers and their ranges, formats.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar/json_schema_internal.h"
#include "io/json_write.h"

namespace qvl::grammar {

std::string gbnf_literal(std::string_view utf8) {
    std::string out = "\"";
    for (const char c : utf8) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20 || u == 0x7F) {
            out += fmt::format("\\x{:02X}", u);
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace qvl::grammar

namespace qvl::grammar::detail {

std::string_view primitive_rules() {
    return R"(ws ::= "" | " " | "\n" [ \t]{0,20}
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
int-part ::= "0" | [1-9] [0-9]{0,14}
frac ::= "." [0-9]{1,15}
number ::= "-"? int-part frac? ( [eE] [-+]? [0-9]{1,3} )?
integer ::= "-"? int-part
boolean ::= "true" | "false"
null ::= "null"
)";
}

std::string json_text(const io::JsonValue& v) {
    switch (v.type()) {
        case io::JsonValue::Type::kNull:
            return "null";
        case io::JsonValue::Type::kBool:
            return v.as_bool() ? "true" : "false";
        case io::JsonValue::Type::kNumber:
            return v.is_integer() ? std::to_string(v.as_int()) : io::json_number(v.as_double());
        case io::JsonValue::Type::kString:
            return io::json_quote(v.as_string());
        case io::JsonValue::Type::kArray: {
            std::string out = "[";
            for (const io::JsonValue& item : v.items()) {
                out += (out.size() > 1 ? ", " : "") + json_text(item);
            }
            return out + "]";
        }
        case io::JsonValue::Type::kObject: {
            std::string out = "{";
            for (const auto& [k, item] : v.members()) {
                out += (out.size() > 1 ? ", " : "") + io::json_quote(k) + ": " + json_text(item);
            }
            return out + "}";
        }
    }
    return "null";
}

namespace {

// Alternatives for the decimal strings of the integers in [lo, hi], both of `width` digits
// (as strings), appended to out as GBNF sequences.
void same_width(const std::string& lo, const std::string& hi, const std::string& prefix,
                std::vector<std::string>& out) {
    if (lo.empty()) {
        out.push_back(prefix.empty() ? "\"\"" : prefix);
        return;
    }
    const std::size_t rest = lo.size() - 1;
    auto digit = [](char a, char b) {
        return a == b ? fmt::format("\"{}\"", a) : fmt::format("[{}-{}]", a, b);
    };
    const std::string any = rest == 0 ? "" : fmt::format(" [0-9]{{{}}}", rest);
    if (lo[0] == hi[0]) {
        same_width(lo.substr(1), hi.substr(1), prefix + " " + digit(lo[0], lo[0]), out);
        return;
    }
    const bool lo_full = lo.find_first_not_of('0', 1) == std::string::npos;
    const bool hi_full = hi.find_first_not_of('9', 1) == std::string::npos;
    const char first = lo_full ? lo[0] : char(lo[0] + 1);
    const char last = hi_full ? hi[0] : char(hi[0] - 1);
    if (!lo_full)
        same_width(lo.substr(1), std::string(rest, '9'), prefix + " " + digit(lo[0], lo[0]), out);
    if (first <= last) out.push_back(prefix + " " + digit(first, last) + any);
    if (!hi_full)
        same_width(std::string(rest, '0'), hi.substr(1), prefix + " " + digit(hi[0], hi[0]), out);
}

// Alternatives for the non-negative integers in [lo, hi].
void nonneg_range(std::int64_t lo, std::int64_t hi, std::vector<std::string>& out) {
    std::int64_t width_end = 9;
    while (lo <= hi) {
        while (width_end < lo) width_end = width_end * 10 + 9;
        const std::int64_t end = std::min(hi, width_end);
        same_width(std::to_string(lo), std::to_string(end), "", out);
        if (end == hi) break;
        lo = end + 1;
    }
}

std::string join_alts(const std::vector<std::string>& alts) {
    std::string out = "(";
    for (std::size_t i = 0; i < alts.size(); ++i) out += (i > 0 ? " |" : "") + alts[i];
    return out + " )";
}

}  // namespace

std::string integer_range(std::int64_t lo, std::int64_t hi) {
    std::vector<std::string> alts;
    if (hi >= 0) nonneg_range(std::max<std::int64_t>(lo, 0), hi, alts);
    if (lo < 0) {
        std::vector<std::string> neg;
        nonneg_range(std::max<std::int64_t>(-hi, 1), -lo, neg);
        alts.push_back(" \"-\" " + join_alts(neg));
    }
    return join_alts(alts);
}

std::string number_range(std::int64_t lo, std::int64_t hi) {
    // Magnitudes in [a, b]: an integer part in [a, b - 1] with any fraction, or b with a zero one.
    auto magnitude = [](std::int64_t a, std::int64_t b) {
        std::string top = fmt::format("\"{}\" ( \".\" \"0\"{{1,15}} )?", b);
        if (a > b - 1) return top;
        return fmt::format("( {} frac? | {} )", integer_range(a, b - 1), top);
    };
    std::vector<std::string> alts;
    if (hi >= 0) alts.push_back(magnitude(std::max<std::int64_t>(lo, 0), hi));
    if (lo < 0) alts.push_back("\"-\" " + magnitude(hi >= 0 ? 0 : -hi, -lo));
    return join_alts(alts);
}

std::string string_format(std::string_view format) {
    const std::string date =
        R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ))";
    const std::string time =
        R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? )"
        R"(( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))";
    std::string body;
    if (format == "date") body = date;
    if (format == "time") body = time;
    if (format == "date-time") body = date + " \"T\" " + time;
    if (format == "uuid") {
        body = R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} )"
               R"("-" [0-9a-fA-F]{12})";
    }
    return body.empty() ? "" : "\"\\\"\" " + body + " \"\\\"\"";
}

}  // namespace qvl::grammar::detail
