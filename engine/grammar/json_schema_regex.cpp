// JSON-schema `pattern` (a regular-expression subset) to a GBNF string expression. The
// pattern describes the string's content; the grammar produces it inside a JSON string, so
// literal quotes and backslashes come out escaped, and classes leave out what would need an
// escape (a quote, a backslash, control characters).
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_internal.h"
#include "io/json_write.h"
#include "text/utf8.h"

namespace qvl::grammar::detail {

namespace {

using base::ErrorCode;
using Ranges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

// The GBNF class of a JSON string's plain characters outside `excluded` (negated), or of
// `included` minus what would need escaping.
std::string gbnf_class(const Ranges& ranges, bool negated) {
    std::string out = negated ? "[^\\\"\\\\\\x00-\\x1F" : "[";
    for (const auto& [lo, hi] : ranges) {
        std::uint32_t a = lo;
        if (!negated) {
            if (a < 0x20) a = 0x20;
            if (a > hi) continue;
        }
        const auto put = [&](std::uint32_t cp) {
            out += cp <= 0xFFFF ? fmt::format("\\u{:04X}", cp) : fmt::format("\\U{:08X}", cp);
        };
        put(a);
        if (hi > a) {
            out += '-';
            put(hi);
        }
    }
    return out + "]";
}

// A translated piece and whether it can match empty text: the grammar's matcher cannot
// repeat without bound something that may match nothing (the repetition's rule would be
// left-recursive), so such patterns are refused here with the reason, not by the grammar later.
struct Piece {
    std::string text;
    bool nullable = false;
};

class RegexCompiler {
  public:
    explicit RegexCompiler(std::string_view p) : p_(p) {}

    base::Result<std::string> run() {
        const bool start = !p_.empty() && p_[0] == '^';
        if (start) ++i_;
        QVL_ASSIGN_OR_RETURN(Piece body, alternation(0));
        if (i_ < p_.size()) return fail("unbalanced ')'");
        const std::string any = "char*";
        return fmt::format("\"\\\"\" {} {} {} \"\\\"\"", start ? "" : any, body.text,
                           end_ ? "" : any);
    }

  private:
    base::Status fail(std::string_view what) const {
        return base::error(ErrorCode::kUnsupported, "pattern '{}': {} (at offset {})", p_, what,
                           i_);
    }
    bool more() const { return i_ < p_.size(); }

    base::Result<Piece> alternation(int depth) {
        if (depth > 64) return fail("groups nested deeper than 64");
        Piece out{"(", false};
        for (;;) {
            QVL_ASSIGN_OR_RETURN(Piece seq, sequence(depth));
            out.text += " " + seq.text;
            out.nullable = out.nullable || seq.nullable;
            if (!more() || p_[i_] != '|') break;
            ++i_;
            out.text += " |";
        }
        out.text += " )";
        return out;
    }

    base::Result<Piece> sequence(int depth) {
        Piece out{"\"\"", true};
        while (more() && p_[i_] != '|' && p_[i_] != ')') {
            if (p_[i_] == '$' && i_ + 1 == p_.size()) {
                end_ = true;
                ++i_;
                break;
            }
            const std::size_t atom_at = i_;
            QVL_ASSIGN_OR_RETURN(Piece atom, this->atom(depth));
            QVL_ASSIGN_OR_RETURN(Quantifier rep, quantifier());
            if (rep.unbounded && atom.nullable) {
                i_ = atom_at;
                return fail(
                    "an unbounded repetition of something that can match empty text (such as "
                    "'(a|)*' or '(b?)+') is not supported; repeat a part that cannot be empty");
            }
            out.nullable = out.nullable && (atom.nullable || rep.min == 0);
            out.text += " ";
            out.text += atom.text;
            out.text += rep.text;
        }
        return out;
    }

    // A quantifier's text for the grammar, its least count and whether it has no upper bound
    // (no quantifier: exactly once).
    struct Quantifier {
        std::string text;
        unsigned long min = 1;
        bool unbounded = false;
    };

    base::Result<Quantifier> quantifier() {
        if (!more()) return Quantifier{};
        std::string q;
        Quantifier out;
        const char c = p_[i_];
        if (c == '*' || c == '+' || c == '?') {
            q = std::string(1, c);
            out.min = c == '+' ? 1 : 0;
            out.unbounded = c != '?';
            ++i_;
        } else if (c == '{') {
            const std::size_t close = p_.find('}', i_);
            if (close == std::string_view::npos) return fail("unterminated '{'");
            q = std::string(p_.substr(i_, close - i_ + 1));
            // Only {m}, {m,} and {m,n} with decimal counts pass to the grammar.
            const std::string_view inner = std::string_view(q).substr(1, q.size() - 2);
            const std::size_t comma = inner.find(',');
            const auto digits = [](std::string_view d) {
                return !d.empty() && d.size() <= 5 &&
                       d.find_first_not_of("0123456789") == std::string_view::npos;
            };
            if (!digits(inner.substr(0, comma)) ||
                (comma != std::string_view::npos && inner.size() > comma + 1 &&
                 !digits(inner.substr(comma + 1)))) {
                return fail(fmt::format("'{}' is not a repetition count", q));
            }
            out.min = std::stoul(std::string(inner.substr(0, comma)));
            out.unbounded = comma != std::string_view::npos && inner.size() == comma + 1;
            i_ = close + 1;
        }
        if (!q.empty() && more() && (p_[i_] == '?' || p_[i_] == '+')) ++i_;  // lazy, possessive
        out.text = std::move(q);
        return out;
    }

    base::Result<Piece> atom(int depth) {
        const char c = p_[i_];
        if (c == '(') {
            ++i_;
            if (p_.substr(i_, 2) == "?:") {
                i_ += 2;
            } else if (p_.substr(i_, 3) == "?P<" ||
                       (p_.substr(i_, 2) == "?<" && p_.substr(i_, 3) != "?<=" &&
                        p_.substr(i_, 3) != "?<!")) {
                const std::size_t close = p_.find('>', i_);
                if (close == std::string_view::npos) return fail("unterminated group name");
                i_ = close + 1;
            } else if (more() && p_[i_] == '?') {
                return fail("lookarounds and inline flags are not supported");
            }
            QVL_ASSIGN_OR_RETURN(Piece inner, alternation(depth + 1));
            if (!more() || p_[i_] != ')') return fail("missing ')'");
            ++i_;
            return inner;
        }
        if (c == '[') {
            QVL_ASSIGN_OR_RETURN(std::string k, klass());
            return Piece{std::move(k), false};
        }
        if (c == '.') {
            ++i_;
            return Piece{"char", false};
        }
        if (c == '*' || c == '+' || c == '?' || c == '{') return fail("nothing to repeat");
        if (c == '^' || c == '$') return fail("anchors inside the pattern are not supported");
        if (c == '\\') {
            Ranges r;
            bool neg = false;
            std::uint32_t cp = 0;
            QVL_TRY(escape(cp, r, neg));
            if (!r.empty() || neg) return Piece{gbnf_class(r, neg), false};
            return Piece{literal(cp), false};
        }
        std::uint32_t cp = 0;
        QVL_TRY(utf8(cp));
        return Piece{literal(cp), false};
    }

    static std::string literal(std::uint32_t cp) {
        std::string s;
        text::detail::append_codepoint(s, char32_t(cp));
        const std::string quoted = io::json_quote(s);
        return gbnf_literal(std::string_view(quoted).substr(1, quoted.size() - 2));
    }

    base::Status utf8(std::uint32_t& cp) {
        const auto c = static_cast<unsigned char>(p_[i_]);
        const int len = c < 0x80         ? 1
                        : (c >> 5) == 6  ? 2
                        : (c >> 4) == 14 ? 3
                        : (c >> 3) == 30 ? 4
                                         : 0;
        if (len == 0 || i_ + std::size_t(len) > p_.size()) return fail("invalid UTF-8");
        cp = len == 1 ? c : c & (0x7Fu >> len);
        for (int k = 1; k < len; ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(p_[i_ + std::size_t(k)]) & 0x3Fu);
        i_ += std::size_t(len);
        return {};
    }

    // One escape: a class (\d \w \s and negations, into r / neg) or a character (cp).
    base::Status escape(std::uint32_t& cp, Ranges& r, bool& neg) {
        if (i_ + 1 >= p_.size()) return fail("pattern ends in '\\'");
        const char e = p_[i_ + 1];
        i_ += 2;
        switch (e) {
            case 'd':
            case 'D':
                r = {{'0', '9'}};
                neg = e == 'D';
                return {};
            case 'w':
            case 'W':
                r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
                neg = e == 'W';
                return {};
            case 's':
            case 'S':
                r = {{' ', ' '}};
                neg = e == 'S';
                return {};
            case 'n':
                cp = '\n';
                return {};
            case 't':
                cp = '\t';
                return {};
            case 'r':
                cp = '\r';
                return {};
            default:
                break;
        }
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
            i_ -= 2;
            return fail(fmt::format("escape '\\{}' is not supported", e));
        }
        cp = static_cast<unsigned char>(e);
        return {};
    }

    base::Result<std::string> klass() {
        ++i_;
        const bool negated = more() && p_[i_] == '^';
        if (negated) ++i_;
        Ranges ranges;
        for (bool first = true; more() && (p_[i_] != ']' || first); first = false) {
            std::uint32_t lo = 0;
            if (p_[i_] == '\\') {
                Ranges r;
                bool neg = false;
                QVL_TRY(escape(lo, r, neg));
                if (neg) return fail("a negated class escape inside a class is not supported");
                if (!r.empty()) {
                    ranges.insert(ranges.end(), r.begin(), r.end());
                    continue;
                }
            } else {
                QVL_TRY(utf8(lo));
            }
            std::uint32_t hi = lo;
            if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
                ++i_;
                if (p_[i_] == '\\') {
                    Ranges r;
                    bool neg = false;
                    QVL_TRY(escape(hi, r, neg));
                    if (!r.empty() || neg) return fail("a class escape cannot end a range");
                } else {
                    QVL_TRY(utf8(hi));
                }
                if (hi < lo) return fail("range out of order");
            }
            ranges.emplace_back(lo, hi);
        }
        if (!more()) return fail("unterminated '['");
        ++i_;
        std::erase_if(ranges, [&](const auto& r) {
            return !negated && (r.first == '"' || r.first == '\\') && r.first == r.second;
        });
        if (!negated && ranges.empty())
            return fail("a class with nothing a JSON string can hold unescaped");
        return gbnf_class(ranges, negated);
    }

    std::string_view p_;
    std::size_t i_ = 0;
    bool end_ = false;
};

}  // namespace

base::Result<std::string> pattern_string(std::string_view pattern) {
    return RegexCompiler(pattern).run();
}

}  // namespace qvl::grammar::detail
