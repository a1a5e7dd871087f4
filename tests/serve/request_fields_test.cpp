// The request fields of issue 51: logprobs/top_logprobs, logit_bias, n, the fields accepted and
// ignored (user, metadata), response_format {"type": "text"}, and every other top-level field
// refused with a 400 naming it (tools are issue 48's: tests/serve/tool_cases.py); http(s) image
// URLs only from the allowed hosts.
#include <gtest/gtest.h>

#include "chat_request.h"
#include "image_url_request.h"

namespace qvl::serve {
namespace {

constexpr std::string_view kMessages = R"("messages":[{"role":"user","content":"x"}])";

Result<ChatRequest> parse(std::string_view fields, ParseLimits limits = {}) {
    const std::string body =
        "{" + std::string(kMessages) + (fields.empty() ? "" : ",") + std::string(fields) + "}";
    return parse_chat_request(body, limits);
}

std::string error_of(std::string_view fields, ParseLimits limits = {}) {
    const Result<ChatRequest> r = parse(fields, limits);
    EXPECT_FALSE(r.ok()) << fields;
    return r.ok() ? std::string() : r.status().message();
}

TEST(RequestFields, LogprobsLogitBiasAndN) {
    ParseLimits limits;
    limits.vocab_size = 1000;
    limits.max_n = 4;
    const Result<ChatRequest> r =
        parse(R"("logprobs":true,"top_logprobs":5,"logit_bias":{"7":100,"12":-3.5},"n":3)", limits);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->top_logprobs, 5);
    EXPECT_EQ(r->n, 3);
    ASSERT_EQ(r->logit_bias.size(), 2u);
    EXPECT_EQ(r->logit_bias[0], (std::pair<std::int32_t, float>{7, 100.0f}));
    EXPECT_EQ(r->logit_bias[1], (std::pair<std::int32_t, float>{12, -3.5f}));
    EXPECT_EQ(parse(R"("logprobs":true)")->top_logprobs, 0);
    EXPECT_EQ(parse(R"("logprobs":false)")->top_logprobs, -1);
    EXPECT_EQ(parse("")->n, 1);

    EXPECT_NE(error_of(R"("top_logprobs":2)").find("top_logprobs: needs \"logprobs\": true"),
              std::string::npos);
    EXPECT_NE(error_of(R"("logprobs":true,"top_logprobs":21)").find("top_logprobs"),
              std::string::npos);
    EXPECT_NE(error_of(R"("logit_bias":{"7":101})", limits).find("logit_bias[\"7\"]"),
              std::string::npos);
    EXPECT_NE(error_of(R"("logit_bias":{"abc":1})", limits).find("token id"), std::string::npos);
    EXPECT_NE(error_of(R"("logit_bias":{"1000":1})", limits).find("outside the vocabulary"),
              std::string::npos);
    EXPECT_NE(error_of(R"("logit_bias":[1])", limits).find("logit_bias: must be an object"),
              std::string::npos);
    EXPECT_NE(error_of(R"("n":5)", limits).find("n: 5 is outside [1, 4]"), std::string::npos);
    EXPECT_NE(error_of(R"("n":0)", limits).find("n:"), std::string::npos);
}

TEST(RequestFields, UnknownAndUnimplementedFieldsAreRefusedByName) {
    // Accepted and ignored; nulls count as absent; response_format text is the default.
    EXPECT_TRUE(parse(R"("user":"u1","metadata":{"k":"v"},"tools":null,"frobnicate":null)").ok());
    EXPECT_TRUE(parse(R"("response_format":{"type":"text"})").ok());
    EXPECT_FALSE(parse(R"("response_format":{"type":"json_object"})")->constraint.empty());
    EXPECT_EQ(error_of(R"("response_format":{"type":"xml"})").rfind("response_format.type: ", 0),
              0u);
    EXPECT_FALSE(parse(R"("response_format":{"type":"json_schema","json_schema":{"name":"n",
        "strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer"}}}}})")
                     ->constraint.empty());
    EXPECT_NE(error_of(R"("response_format":{"type":"json_schema","json_schema":{"schema":
        {"type":"string","contentEncoding":"base64"}}})")
                  .find("response_format.json_schema.schema: JSON schema at '#': unsupported "
                        "keyword 'contentEncoding'"),
              std::string::npos);
    EXPECT_TRUE(parse(R"("stream":true,"stream_options":{"include_usage":true})")->include_usage);
    for (const char* field :
         {R"("frobnicate":1)", R"("functions":[])", R"("modalities":["text","audio"])",
          R"("store":true)", R"("service_tier":"auto")", R"("prediction":{})",
          R"("reasoning_effort":"low")"}) {
        const std::string name(
            std::string_view(field).substr(1, std::string_view(field).find('"', 1) - 1));
        const std::string e = error_of(field);
        EXPECT_EQ(e.rfind(name + ": ", 0), 0u) << field << " -> " << e;
    }
    EXPECT_NE(error_of(R"("stream_options":{"include_obfuscation":true})")
                  .find("stream_options.include_obfuscation"),
              std::string::npos);
}

TEST(RequestFields, RemoteImagesOnlyFromAllowedHosts) {
    const auto with_url = test::image_url_request;
    ParseLimits limits;
    limits.allowed_media_hosts = {"127.0.0.1", "images.example.com"};
    Result<ChatRequest> ok = parse_chat_request(with_url("http://127.0.0.1:8123/a.png"), limits);
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    EXPECT_EQ(ok->messages[0].parts[0].image.remote_url, "http://127.0.0.1:8123/a.png");
    EXPECT_TRUE(parse_chat_request(with_url("https://IMAGES.example.com/x?y=1"), limits).ok());
    const Result<ChatRequest> other =
        parse_chat_request(with_url("http://127.0.0.1.evil.com/a.png"), limits);
    ASSERT_FALSE(other.ok());
    EXPECT_NE(other.status().message().find("host '127.0.0.1.evil.com' is not in "
                                            "--allowed-media-hosts"),
              std::string::npos);
    EXPECT_FALSE(parse_chat_request(with_url("http://images.example.com@evil.com/"), limits).ok());

    EXPECT_EQ(url_host("http://User@Example.COM:8080/x"), "example.com");
    EXPECT_EQ(url_host("https://[::1]:9/x"), "[::1]");
    EXPECT_EQ(url_host("http://host?q"), "host");
    EXPECT_EQ(url_host("ftp://host/"), "");
}

}  // namespace
}  // namespace qvl::serve
