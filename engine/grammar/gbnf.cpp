#include "grammar/gbnf.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qvl::grammar {

namespace {

using base::ErrorCode;
using Seq = GrammarBuilder::Seq;

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

class Parser {
  public:
    explicit Parser(std::string_view s) : s_(s) {}

    base::Status parse_rules() {
        for (skip_ws(); i_ < s_.size(); skip_ws()) {
            const std::size_t at = i_;
            const std::string_view name = parse_name();
            if (name.empty()) return fail("expected a rule name");
            skip_ws();
            if (s_.substr(i_, 3) != "::=") return fail("expected '::=' after the rule name");
            i_ += 3;
            const std::int32_t r = b_.rule(name);
            if (b_.defined(r)) {
                i_ = at;
                return fail(fmt::format("rule '{}' is defined twice", name));
            }
            b_.mark_defined(r);
            QVL_TRY(parse_alternatives(r, 0));
        }
        return {};
    }

    GrammarBuilder& builder() { return b_; }

  private:
    base::Status fail(std::string_view what) const {
        int line = 1, col = 1;
        for (std::size_t k = 0; k < i_ && k < s_.size(); ++k) {
            col = s_[k] == '\n' ? 1 : col + 1;
            line += s_[k] == '\n' ? 1 : 0;
        }
        return base::error(ErrorCode::kInvalidArgument, "grammar line {} column {}: {}", line, col,
                           what);
    }

    void skip_ws() {
        while (i_ < s_.size()) {
            const char c = s_[i_];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                ++i_;
            } else if (c == '#') {
                while (i_ < s_.size() && s_[i_] != '\n') ++i_;
            } else {
                break;
            }
        }
    }

    std::string_view parse_name() {
        const std::size_t start = i_;
        while (i_ < s_.size() && name_char(s_[i_])) ++i_;
        return s_.substr(start, i_ - start);
    }

    // Whether a `name ::=` (the next rule) starts at i_.
    bool at_rule_start() {
        const std::size_t save = i_;
        const bool named = !parse_name().empty();
        skip_ws();
        const bool yes = named && s_.substr(i_, 3) == "::=";
        i_ = save;
        return yes;
    }

    base::Status parse_alternatives(std::int32_t rule, int depth) {
        if (depth > kMaxNesting)
            return fail(fmt::format("groups nested deeper than {}", kMaxNesting));
        for (;;) {
            Seq seq;
            QVL_TRY(parse_sequence(seq, depth));
            QVL_TRY(b_.add_alt(rule, seq));
            skip_ws();
            if (i_ >= s_.size() || s_[i_] != '|') return {};
            ++i_;
        }
    }

    base::Status parse_sequence(Seq& seq, int depth) {
        for (;;) {
            skip_ws();
            if (i_ >= s_.size() || s_[i_] == '|' || s_[i_] == ')' || at_rule_start()) return {};
            Seq part;
            QVL_TRY(parse_primary(part, depth));
            QVL_TRY(parse_postfix(seq, std::move(part)));
        }
    }

    base::Status parse_primary(Seq& part, int depth) {
        const char c = s_[i_];
        if (c == '"') return parse_literal(part);
        if (c == '[') return parse_class(part);
        if (c == '.') {
            ++i_;
            part.push_back(b_.chars({}, true));
            return {};
        }
        if (c == '(') {
            ++i_;
            const std::int32_t group = b_.fresh_rule("group");
            QVL_TRY(parse_alternatives(group, depth + 1));
            skip_ws();
            if (i_ >= s_.size() || s_[i_] != ')') return fail("expected ')'");
            ++i_;
            part.push_back(GrammarBuilder::ref(group));
            return {};
        }
        const std::string_view name = parse_name();
        if (name.empty()) return fail(fmt::format("unexpected character '{}'", c));
        part.push_back(GrammarBuilder::ref(b_.rule(name)));
        return {};
    }

    base::Status parse_postfix(Seq& seq, Seq part) {
        int min = 1, max = 1;
        if (i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '+' || s_[i_] == '?')) {
            min = s_[i_] == '+' ? 1 : 0;
            max = s_[i_] == '?' ? 1 : -1;
            ++i_;
        } else if (i_ < s_.size() && s_[i_] == '{') {
            QVL_TRY(parse_braces(min, max));
        } else {
            seq.insert(seq.end(), part.begin(), part.end());
            return {};
        }
        if (part.empty()) return {};  // repeating nothing is nothing
        Elem x = part[0];
        if (part.size() > 1) {
            const std::int32_t lit = b_.fresh_rule("lit");
            QVL_TRY(b_.add_alt(lit, part));
            x = GrammarBuilder::ref(lit);
        }
        base::Status st = b_.repeat(seq, x, min, max);
        return st.ok() ? st : fail(st.message());
    }

    base::Status parse_int(int& out) {
        const std::size_t start = i_;
        long long v = 0;
        while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
            v = v * 10 + (s_[i_++] - '0');
            if (v > kMaxRepeat) return fail(fmt::format("repetition count over {}", kMaxRepeat));
        }
        if (i_ == start) return fail("expected a number in '{m,n}'");
        out = int(v);
        return {};
    }

    base::Status parse_braces(int& min, int& max) {
        ++i_;
        skip_ws();
        QVL_TRY(parse_int(min));
        skip_ws();
        max = min;
        if (i_ < s_.size() && s_[i_] == ',') {
            ++i_;
            skip_ws();
            max = -1;
            if (i_ < s_.size() && s_[i_] != '}') QVL_TRY(parse_int(max));
            skip_ws();
        }
        if (i_ >= s_.size() || s_[i_] != '}') return fail("expected '}'");
        ++i_;
        if (max >= 0 && max < min) return fail("repetition {m,n} with n < m");
        return {};
    }

    // One code point of a literal or class, escapes decoded.
    base::Status parse_char(std::uint32_t& cp) {
        if (i_ >= s_.size()) return fail("unterminated literal or class");
        const auto c = static_cast<unsigned char>(s_[i_]);
        if (c == '\\') return parse_escape(cp);
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || i_ + std::size_t(len) > s_.size()) return fail("invalid UTF-8");
        cp = len == 1 ? c : c & (0x7F >> len);
        for (int k = 1; k < len; ++k) {
            const auto t = static_cast<unsigned char>(s_[i_ + std::size_t(k)]);
            if ((t & 0xC0) != 0x80) return fail("invalid UTF-8");
            cp = (cp << 6) | (t & 0x3F);
        }
        i_ += std::size_t(len);
        return {};
    }

    base::Status parse_escape(std::uint32_t& cp) {
        if (i_ + 1 >= s_.size()) return fail("unterminated escape");
        const char e = s_[i_ + 1];
        i_ += 2;
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (digits > 0) {
            cp = 0;
            for (int k = 0; k < digits; ++k, ++i_) {
                const int h = i_ < s_.size() ? hex_value(s_[i_]) : -1;
                if (h < 0) return fail(fmt::format("'\\{}' needs {} hex digits", e, digits));
                cp = cp * 16 + std::uint32_t(h);
            }
            if (cp > 0x10FFFF) return fail("code point above U+10FFFF");
            return {};
        }
        switch (e) {
            case 'n':
                cp = '\n';
                return {};
            case 'r':
                cp = '\r';
                return {};
            case 't':
                cp = '\t';
                return {};
            case '\\':
            case '"':
            case '[':
            case ']':
            case '-':
            case '/':
            case '^':
                cp = std::uint32_t(static_cast<unsigned char>(e));
                return {};
            default:
                i_ -= 2;
                return fail(fmt::format("unknown escape '\\{}'", e));
        }
    }

    base::Status parse_literal(Seq& part) {
        ++i_;
        while (i_ < s_.size() && s_[i_] != '"') {
            std::uint32_t cp = 0;
            QVL_TRY(parse_char(cp));
            part.push_back(b_.chars({{cp, cp}}, false));
        }
        if (i_ >= s_.size()) return fail("unterminated string literal");
        ++i_;
        return {};
    }

    base::Status parse_class(Seq& part) {
        ++i_;
        const bool negated = i_ < s_.size() && s_[i_] == '^';
        if (negated) ++i_;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
        while (i_ < s_.size() && s_[i_] != ']') {
            std::uint32_t lo = 0, hi = 0;
            QVL_TRY(parse_char(lo));
            hi = lo;
            if (i_ + 1 < s_.size() && s_[i_] == '-' && s_[i_ + 1] != ']') {
                ++i_;
                QVL_TRY(parse_char(hi));
                if (hi < lo) return fail("character range with its end before its start");
            }
            ranges.emplace_back(lo, hi);
        }
        if (i_ >= s_.size()) return fail("unterminated character class");
        ++i_;
        part.push_back(b_.chars(std::move(ranges), negated));
        return {};
    }

    std::string_view s_;
    std::size_t i_ = 0;
    GrammarBuilder b_;
};

}  // namespace

base::Result<Grammar> parse_gbnf(std::string_view text, std::string_view root) {
    Parser p(text);
    QVL_TRY(p.parse_rules());
    return p.builder().finish(root);
}

}  // namespace qvl::grammar
