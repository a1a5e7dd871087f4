// The JSON-schema compiler: what each keyword accepts and refuses (through the matcher on a
// byte vocabulary), the schemas Pydantic v2 emits, and errors that name the keyword.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace qvl::grammar {
namespace {

std::shared_ptr<const Vocab> bytes_vocab() {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, char(b));
    return std::make_shared<Vocab>(bytes);
}

class Schema {
  public:
    explicit Schema(std::string_view schema) {
        auto gbnf = json_schema_to_gbnf(schema);
        EXPECT_TRUE(gbnf.ok()) << gbnf.status().message();
        if (!gbnf.ok()) return;
        auto g = parse_gbnf(gbnf.value());
        EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf.value();
        if (g.ok()) grammar_ = std::make_shared<const Grammar>(std::move(g).value());
    }
    bool accepts(std::string_view json) const {
        if (!grammar_) return false;
        Matcher m(grammar_, vocab_, {});
        return m.accept_bytes(json) && m.can_end();
    }

  private:
    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const Vocab> vocab_ = bytes_vocab();
};

std::string error_of(std::string_view schema) {
    auto gbnf = json_schema_to_gbnf(schema);
    return gbnf.ok() ? std::string() : gbnf.status().message();
}

TEST(JsonSchema, ObjectsWithRequiredOptionalAndNoExtras) {
    Schema s(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},
        "c":{"type":"boolean"}},"required":["b"],"additionalProperties":false})");
    EXPECT_TRUE(s.accepts(R"({"b":"x"})"));
    EXPECT_TRUE(s.accepts(R"({"a": 1, "b": "x", "c": true})"));
    EXPECT_TRUE(s.accepts("{\n  \"a\": -12,\n  \"b\": \"\"\n}"));
    EXPECT_TRUE(s.accepts(R"({"b":"x","c":false})"));
    EXPECT_FALSE(s.accepts(R"({"a":1})"));
    EXPECT_FALSE(s.accepts(R"({"b":"x","d":1})"));
    EXPECT_FALSE(s.accepts(R"({"b":"x",})"));
    EXPECT_FALSE(s.accepts(R"({,"b":"x"})"));
    EXPECT_FALSE(s.accepts(R"({"a":1.5,"b":"x"})"));
}

TEST(JsonSchema, ExtraPropertiesWhenAllowed) {
    Schema s(R"({"type":"object","properties":{"a":{"type":"integer"}}})");
    EXPECT_TRUE(s.accepts(R"({"a":1,"z":[1,{"q":null}]})"));
    EXPECT_TRUE(s.accepts(R"({"z":"y"})"));
    EXPECT_TRUE(s.accepts("{}"));
    Schema typed(R"({"type":"object","additionalProperties":{"type":"number"}})");
    EXPECT_TRUE(typed.accepts(R"({"x":1.5e3,"y":0})"));
    EXPECT_FALSE(typed.accepts(R"({"x":"s"})"));
}

TEST(JsonSchema, ArraysAndBounds) {
    Schema s(
        R"({"type":"array","items":{"type":"integer","minimum":-5,"maximum":120},"minItems":1,"maxItems":3})");
    EXPECT_TRUE(s.accepts("[0]"));
    EXPECT_TRUE(s.accepts("[-5, 120, 99]"));
    EXPECT_FALSE(s.accepts("[]"));
    EXPECT_FALSE(s.accepts("[1,2,3,4]"));
    EXPECT_FALSE(s.accepts("[121]"));
    EXPECT_FALSE(s.accepts("[-6]"));
    EXPECT_FALSE(s.accepts("[007]"));
    Schema tuple(
        R"({"type":"array","prefixItems":[{"type":"string"},{"type":"null"}],"minItems":2,"maxItems":2})");
    EXPECT_TRUE(tuple.accepts(R"(["a", null])"));
    EXPECT_FALSE(tuple.accepts(R"(["a"])"));
    EXPECT_FALSE(tuple.accepts(R"(["a", null, null])"));
}

TEST(JsonSchema, IntegerRangesAreExact) {
    Schema s(R"({"type":"integer","minimum":17,"exclusiveMaximum":1234})");
    for (int v = -20; v < 1300; ++v) {
        EXPECT_EQ(s.accepts(std::to_string(v)), v >= 17 && v < 1234) << v;
    }
    Schema neg(R"({"type":"integer","minimum":-250,"maximum":-3})");
    for (int v = -300; v < 10; ++v)
        EXPECT_EQ(neg.accepts(std::to_string(v)), v >= -250 && v <= -3) << v;
}

TEST(JsonSchema, NumbersWithIntegralBounds) {
    Schema s(R"({"type":"number","minimum":-1,"maximum":1})");
    for (const char* ok : {"0", "0.5", "1", "1.000", "-1", "-0.25", "-1.0"})
        EXPECT_TRUE(s.accepts(ok)) << ok;
    for (const char* bad : {"1.5", "-1.01", "2", "1e3", "01"}) EXPECT_FALSE(s.accepts(bad)) << bad;
    Schema plain(R"({"type":"number"})");
    EXPECT_TRUE(plain.accepts("-12.5e-3"));
    EXPECT_FALSE(plain.accepts("1234567890123456"));  // 16 digits
}

TEST(JsonSchema, StringsEnumsConstsAndFormats) {
    Schema len(R"({"type":"string","minLength":2,"maxLength":3})");
    EXPECT_TRUE(len.accepts(R"("ab")"));
    EXPECT_TRUE(len.accepts(R"("a\"c")"));
    EXPECT_TRUE(len.accepts(R"("éü€")"));
    EXPECT_FALSE(len.accepts(R"("a")"));
    EXPECT_FALSE(len.accepts(R"("abcd")"));
    Schema e(R"({"enum":["red","grün",3,null,{"a":[1]}]})");
    EXPECT_TRUE(e.accepts(R"("grün")"));
    EXPECT_TRUE(e.accepts("3"));
    EXPECT_TRUE(e.accepts("null"));
    EXPECT_TRUE(e.accepts(R"({"a": [1]})"));
    EXPECT_FALSE(e.accepts(R"("blue")"));
    Schema c(R"({"const":"a\"b"})");
    EXPECT_TRUE(c.accepts(R"("a\"b")"));
    Schema d(R"({"type":"string","format":"date-time"})");
    EXPECT_TRUE(d.accepts(R"("2024-02-29T13:05:00Z")"));
    EXPECT_FALSE(d.accepts(R"("2024-13-29T13:05:00Z")"));
    Schema email(R"({"type":"string","format":"email"})");  // an annotation
    EXPECT_TRUE(email.accepts(R"("anything")"));
}

TEST(JsonSchema, Patterns) {
    Schema s(R"J({"type":"string","pattern":"^[A-Z]{2}-\\d{3,4}(x|yz)?$"})J");
    EXPECT_TRUE(s.accepts(R"("AB-123")"));
    EXPECT_TRUE(s.accepts(R"("AB-1234yz")"));
    EXPECT_FALSE(s.accepts(R"("AB-12")"));
    EXPECT_FALSE(s.accepts(R"("ab-123")"));
    Schema search(R"({"type":"string","pattern":"ok"})");
    EXPECT_TRUE(search.accepts(R"("it is ok!")"));
    EXPECT_FALSE(search.accepts(R"("it is o.k.")"));
    EXPECT_NE(error_of(R"J({"type":"string","pattern":"(?=x)"})J").find("lookarounds"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"type":"string","pattern":"\\1"})").find("'\\1'"), std::string::npos);
    // Found by the fuzzer: a brace that is not a count must not reach the grammar.
    EXPECT_NE(
        error_of(R"({"type":"string","pattern":"^[}]{--A1Z\\d{3}$"})").find("repetition count"),
        std::string::npos);
    EXPECT_NE(error_of(R"({"type":"string","pattern":"a{99999999}"})").find("repetition count"),
              std::string::npos);
}

// Found by the fuzzer: an unbounded repetition of a part that can match empty text compiled to a
// left-recursive rule the grammar then refused. The compiler refuses it itself and says why;
// the same parts repeated a bounded number of times, or made non-empty, still work.
TEST(JsonSchema, PatternsRepeatingEmptyParts) {
    for (const char* p : {"(a|)*", "(,,||y){3,}", "(a?b?)+", "(a{0})*", "((a|)b?)*", "(x*)+"}) {
        const std::string schema = std::string(R"({"type":"string","pattern":")") + p + "\"}";
        EXPECT_NE(error_of(schema).find("can match empty text"), std::string::npos) << p;
    }
    Schema bounded(R"({"type":"string","pattern":"^(a|){2}b$"})");
    EXPECT_TRUE(bounded.accepts(R"("aab")"));
    EXPECT_TRUE(bounded.accepts(R"("b")"));
    EXPECT_FALSE(bounded.accepts(R"("aaab")"));
    Schema nonempty(R"({"type":"string","pattern":"^(ab?)*(c{1,2}d?)+$"})");
    EXPECT_TRUE(nonempty.accepts(R"("aabccdc")"));
    EXPECT_FALSE(nonempty.accepts(R"("ab")"));
}

TEST(JsonSchema, UnionsRefsAndRecursion) {
    Schema s(R"({"$defs":{"Node":{"type":"object","properties":{"v":{"type":["integer","null"]},
        "kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["v","kids"],
        "additionalProperties":false}},"$ref":"#/$defs/Node"})");
    EXPECT_TRUE(s.accepts(R"({"v":1,"kids":[{"v":null,"kids":[]}]})"));
    EXPECT_FALSE(s.accepts(R"({"v":1,"kids":[{"v":"x","kids":[]}]})"));
    Schema any(R"({"anyOf":[{"type":"string","maxLength":1},{"type":"boolean"}]})");
    EXPECT_TRUE(any.accepts(R"("a")"));
    EXPECT_TRUE(any.accepts("true"));
    EXPECT_FALSE(any.accepts("1"));
}

// oneOf compiles as anyOf only when no value can match two branches; otherwise it is refused
// naming the branches, since a grammar cannot forbid a value that matches both.
TEST(JsonSchema, OneOfOnlyWithExclusiveBranches) {
    // Pydantic v2's discriminated union: the branches' required tag has different constants.
    Schema pets(R"({"$defs":{"Cat":{"properties":{"pet_type":{"const":"cat","title":"Pet Type",
        "type":"string"},"lives":{"type":"integer"}},"required":["pet_type","lives"],"title":"Cat",
        "type":"object"},"Dog":{"properties":{"pet_type":{"enum":["dog"],"type":"string"},
        "barks":{"type":"boolean"}},"required":["pet_type","barks"],"type":"object"}},
        "properties":{"pet":{"discriminator":{"mapping":{"cat":"#/$defs/Cat","dog":"#/$defs/Dog"},
        "propertyName":"pet_type"},"oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}],
        "title":"Pet"}},"required":["pet"],"type":"object","additionalProperties":false})");
    EXPECT_TRUE(pets.accepts(R"({"pet":{"pet_type":"cat","lives":9}})"));
    EXPECT_TRUE(pets.accepts(R"({"pet":{"pet_type":"dog","barks":true}})"));
    Schema types(R"({"oneOf":[{"type":"string"},{"type":"integer"},{"type":["null","boolean"]},
        {"type":"number","exclusiveMinimum":0,"enum":[0.5,1.5]}]})");
    EXPECT_TRUE(types.accepts(R"("x")"));
    EXPECT_TRUE(types.accepts("1.5"));
    Schema closed(
        R"({"oneOf":[{"properties":{"a":{}},"required":["a"],"additionalProperties":false},
        {"properties":{"b":{}},"required":["b"],"additionalProperties":false}]})");
    EXPECT_TRUE(closed.accepts(R"({"b":[1]})"));
    EXPECT_TRUE(Schema(R"({"oneOf":[{"enum":[1,"a"]},{"enum":[2,"b"]}]})").accepts("2"));

    const std::string numbers = error_of(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})");
    EXPECT_NE(numbers.find("'oneOf' branches 0 and 1 may both match"), std::string::npos)
        << numbers;
    EXPECT_NE(error_of(R"({"oneOf":[{"enum":[1,"a"]},{"enum":["b","a"]}]})").find("'oneOf'"),
              std::string::npos);
    // Objects that may share a value: nothing required tells them apart.
    EXPECT_NE(error_of(R"({"oneOf":[{"type":"object","properties":{"a":{"const":1}}},
        {"type":"object","properties":{"a":{"const":2}}}]})")
                  .find("branches 0 and 1"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"oneOf":[{"type":"string"},{"$ref":"#/nowhere"}]})")
                  .find("'#/nowhere' points to nothing"),
              std::string::npos);
}

TEST(JsonSchema, UnicodeKeysAndAnnotations) {
    Schema s(
        R"({"title":"T","description":"d","$schema":"https://json-schema.org/draft/2020-12/schema",
        "type":"object","properties":{"名前":{"type":"string","examples":["x"],"default":"y"},
        "a\"b":{"type":"integer"}},"required":["名前","a\"b"],"additionalProperties":false})");
    EXPECT_TRUE(s.accepts(R"({"名前":"太郎","a\"b":1})"));
    EXPECT_FALSE(s.accepts(R"({"名":"太郎","a\"b":1})"));
}

// What Pydantic v2 (model_json_schema) and openai's .parse() (strict: every field required,
// additionalProperties false, Optional as anyOf with null) emit.
TEST(JsonSchema, PydanticAndOpenAiParseSchemas) {
    Schema s(R"({"$defs":{"Color":{"enum":["red","green"],"title":"Color","type":"string"},
      "Item":{"properties":{"name":{"title":"Name","type":"string"},"qty":{"title":"Qty","type":"integer"}},
        "required":["name","qty"],"title":"Item","type":"object","additionalProperties":false}},
      "properties":{"items":{"items":{"$ref":"#/$defs/Item"},"title":"Items","type":"array"},
        "color":{"$ref":"#/$defs/Color"},
        "note":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"Note"},
        "when":{"format":"date","title":"When","type":"string"},
        "pair":{"maxItems":2,"minItems":2,"prefixItems":[{"type":"integer"},{"type":"number"}],"type":"array"}},
      "required":["items","color","note","when","pair"],"title":"Order","type":"object",
      "additionalProperties":false})");
    EXPECT_TRUE(s.accepts(
        R"({"items":[{"name":"a","qty":2}],"color":"red","note":null,"when":"2024-01-31","pair":[1,2.5]})"));
    EXPECT_FALSE(s.accepts(
        R"({"items":[{"name":"a","qty":2}],"color":"blue","note":null,"when":"2024-01-31","pair":[1,2.5]})"));
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
    EXPECT_NE(error_of(R"({"type":"string","contentEncoding":"base64"})").find("'contentEncoding'"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"type":"number","multipleOf":3})").find("'multipleOf'"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"type":"array","uniqueItems":true})").find("'uniqueItems'"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"type":"object","properties":{"a":{"not":{}}}})").find("#/properties/a"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"$ref":"#/$defs/Missing"})").find("points to nothing"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"type":"integer","minimum":5,"maximum":1})").find("no value"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"type":"number","minimum":0.5})").find("'minimum' 0.5"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"type":"strin"})").find("unknown type 'strin'"), std::string::npos);
    EXPECT_NE(error_of("{").find("JSON schema"), std::string::npos);
    std::string deep;
    for (int i = 0; i < 500; ++i) deep += R"({"type":"array","items":)";
    deep += "{}" + std::string(500, '}');
    EXPECT_NE(error_of(deep).find("nested deeper"), std::string::npos);
}

TEST(JsonSchema, HugeEnumsCompile) {
    std::string schema = R"({"enum":[)";
    for (int i = 0; i < 20000; ++i) schema += (i ? ",\"v" : "\"v") + std::to_string(i) + "\"";
    schema += "]}";
    Schema s(schema);
    EXPECT_TRUE(s.accepts(R"("v19999")"));
    EXPECT_FALSE(s.accepts(R"("v20000")"));
}

TEST(JsonSchema, JsonObjectMode) {
    auto g = parse_gbnf(json_object_gbnf());
    ASSERT_TRUE(g.ok());
    Matcher m(std::make_shared<const Grammar>(std::move(g).value()), bytes_vocab(), {});
    EXPECT_TRUE(m.accept_bytes(R"({"a": [1, "x", {"b": null}]})") && m.can_end());
}

}  // namespace
}  // namespace qvl::grammar
