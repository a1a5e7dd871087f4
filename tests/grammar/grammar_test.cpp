// GBNF parsing, the matcher's acceptance of byte strings and its token mask on a small
// vocabulary (tokens ending mid-character, end tokens only where the grammar may end).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace qvl::grammar {
namespace {

std::shared_ptr<const Vocab> byte_vocab(std::vector<std::string> extra = {}) {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, char(b));
    for (std::string& s : extra) bytes.push_back(std::move(s));
    bytes.emplace_back();  // 256 + extra: the end token (no bytes)
    return std::make_shared<Vocab>(bytes);
}

Matcher make(std::string_view gbnf, std::shared_ptr<const Vocab> vocab = byte_vocab()) {
    auto g = parse_gbnf(gbnf);
    EXPECT_TRUE(g.ok()) << g.status().message();
    const std::int32_t end = vocab->size() - 1;
    return Matcher(std::make_shared<const Grammar>(std::move(g).value()), std::move(vocab), {end});
}

bool full_match(std::string_view gbnf, std::string_view text) {
    Matcher m = make(gbnf);
    return m.accept_bytes(text) && m.can_end();
}

TEST(Gbnf, LiteralsClassesAndRepetitions) {
    const char* g = R"(# a comment
root ::= "ab" [0-9]+ ( "x" | "yz" )? tail{2,3}
tail ::= [^a-z\n]   # negated class
)";
    EXPECT_TRUE(full_match(g, "ab1x!!"));
    EXPECT_TRUE(full_match(g, "ab12yz!!!"));
    EXPECT_FALSE(full_match(g, "ab12yz!!!!"));
    EXPECT_FALSE(full_match(g, "ab12yz!"));
    EXPECT_FALSE(full_match(g, "abx!!"));
    EXPECT_FALSE(full_match(g, "ab1x!a"));
}

TEST(Gbnf, EscapesUnicodeAndDot) {
    EXPECT_TRUE(full_match(R"(root ::= "\x41\u00e9\U0001F600\n\"\\" .)",
                           "A\xC3\xA9\xF0\x9F\x98\x80\n\"\\z"));
    EXPECT_TRUE(full_match(R"(root ::= [α-ω]+)", "\xCE\xB1\xCE\xB2"));
    EXPECT_FALSE(full_match(R"(root ::= [α-ω]+)", "a"));
}

TEST(Gbnf, ErrorsNameTheProblem) {
    auto expect_error = [](std::string_view text, std::string_view needle) {
        auto g = parse_gbnf(text);
        ASSERT_FALSE(g.ok()) << text;
        EXPECT_NE(g.status().message().find(needle), std::string::npos) << g.status().message();
    };
    expect_error("root ::= foo", "'foo' is used but not defined");
    expect_error("start ::= \"a\"", "no rule named 'root'");
    expect_error("root ::= root \"a\" | \"b\"", "left-recursive");
    expect_error("root ::= x* \"a\"\nx ::= \"b\"?", "left-recursive");
    expect_error("root ::= (\"a\" | \"\")*", "a repetition of something that can match empty text");
    expect_error("root ::= \"abc", "unterminated string literal");
    expect_error("root ::= [a-", "unterminated");
    expect_error("root ::= \"a\"{5,2}", "n < m");
    expect_error("root ::= \"a\"{100000}", "repetition count over");
    expect_error("root ::= \"\\q\"", "unknown escape");
    expect_error("root ::= (((\"a\")", "expected ')'");
    expect_error("root ::= \"a\"\nroot ::= \"b\"", "defined twice");
    expect_error("root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')'),
                 "nested deeper");
}

TEST(Gbnf, RepetitionKeepsTheStateSmall) {
    Matcher m = make(R"(root ::= "[" [a-z]* "]")");
    ASSERT_TRUE(m.accept_bytes("[ab"));
    const auto first = std::vector<std::uint64_t>(m.mask().begin(), m.mask().end());
    ASSERT_TRUE(m.accept_bytes("cdefghijklmnop"));
    const auto later = std::vector<std::uint64_t>(m.mask().begin(), m.mask().end());
    EXPECT_EQ(first, later);  // the same state: a cached mask
}

TEST(Matcher, MaskFollowsTheGrammarAndEndsOnlyWhereItMay) {
    // Tokens: the 256 bytes, "ab", "b]", the first two bytes of "é", "é]", then the end token.
    auto vocab = byte_vocab({"ab", "b]", "\xC3", "\xA9]"});
    const int ab = 256, b_close = 257, e_lead = 258, e_tail_close = 259, end = 260;
    Matcher m = make(R"(root ::= "[" ( [a-b] | "é" )+ "]")", vocab);
    auto mask = m.mask();
    EXPECT_TRUE(m.allowed(mask, '['));
    EXPECT_FALSE(m.allowed(mask, 'a'));
    EXPECT_FALSE(m.allowed(mask, end));
    ASSERT_TRUE(m.accept('['));
    mask = m.mask();
    EXPECT_TRUE(m.allowed(mask, ab));
    EXPECT_TRUE(m.allowed(mask, b_close));
    EXPECT_TRUE(m.allowed(mask, e_lead));  // ends in the middle of a character that may come
    EXPECT_TRUE(m.allowed(mask, 0xC3));
    EXPECT_FALSE(m.allowed(mask, 0xC4));  // no allowed character starts with this byte
    EXPECT_FALSE(m.allowed(mask, 0xF0));  // a 4-byte character is at least U+10000
    EXPECT_FALSE(m.allowed(mask, 0xC0));  // never UTF-8
    EXPECT_FALSE(m.allowed(mask, ']'));
    EXPECT_FALSE(m.allowed(mask, e_tail_close));
    ASSERT_TRUE(m.accept(e_lead));
    mask = m.mask();
    EXPECT_TRUE(m.allowed(mask, e_tail_close));
    EXPECT_FALSE(m.allowed(mask, 'a'));
    EXPECT_FALSE(m.accept('a'));  // refused, state unchanged
    ASSERT_TRUE(m.accept(e_tail_close));
    EXPECT_TRUE(m.must_end());
    mask = m.mask();
    EXPECT_TRUE(m.allowed(mask, end));
    for (int id = 0; id < end; ++id) EXPECT_FALSE(m.allowed(mask, id)) << id;
    EXPECT_TRUE(m.accept(end));
    EXPECT_TRUE(m.finished());
}

TEST(Matcher, AmbiguousGrammarsKeepEveryParse) {
    EXPECT_TRUE(full_match(R"(root ::= ("a" | "ab") "b"?)", "ab"));
    EXPECT_TRUE(full_match(R"(root ::= x "c"
x ::= "a"* | "a" "b")",
                           "abc"));
    EXPECT_TRUE(full_match(R"(root ::= "" | "a" root)", "aaa"));
    EXPECT_TRUE(full_match(R"(root ::= "")", ""));
}

}  // namespace
}  // namespace qvl::grammar
