// The request parser (JSON body -> ChatRequest) and its helpers: what is accepted, and that
// every refusal names the field.
#include <gtest/gtest.h>

#include "base64.h"
#include "chat_request.h"
#include "image_url_request.h"

namespace qvl::serve {
namespace {

ChatRequest parse_ok(std::string_view body, ParseLimits limits = {}) {
    Result<ChatRequest> r = parse_chat_request(body, limits);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : ChatRequest{};
}

std::string parse_error(std::string_view body, ParseLimits limits = {}) {
    Result<ChatRequest> r = parse_chat_request(body, limits);
    EXPECT_FALSE(r.ok()) << body;
    return r.ok() ? std::string() : r.status().message();
}

TEST(ChatRequestTest, ReadsMessagesPartsAndSampling) {
    const ChatRequest r = parse_ok(R"({"model":"m","messages":[
        {"role":"system","content":"be brief"},
        {"role":"user","content":[{"type":"text","text":"what is this?"},
            {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}]},
        {"role":"assistant","content":"a cat"},
        {"role":"user","content":"sure?"}],
        "max_tokens":7,"temperature":0,"top_p":0.5,"top_k":3,"seed":-1,"stop":["\n","END"],
        "presence_penalty":0.5,"frequency_penalty":-1,"repetition_penalty":1.1,
        "stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"user":"x"})");
    ASSERT_EQ(r.messages.size(), 4u);
    EXPECT_EQ(r.model, "m");
    ASSERT_EQ(r.messages[1].parts.size(), 2u);
    EXPECT_EQ(r.messages[1].parts[1].kind, RequestPart::Kind::kImage);
    EXPECT_EQ(r.messages[1].parts[1].image.bytes.size(), 4u);
    EXPECT_EQ(r.messages[1].parts[1].image.where, "messages[1].content[1]");
    EXPECT_EQ(r.image_count, 1);
    EXPECT_EQ(r.max_tokens, 7);
    EXPECT_EQ(r.temperature, 0.0f);
    EXPECT_EQ(r.top_k, 3);
    EXPECT_EQ(r.seed, ~std::uint64_t(0));
    EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
    EXPECT_TRUE(r.stream && r.include_usage && r.ignore_eos);
    EXPECT_FLOAT_EQ(*r.repetition_penalty, 1.1f);
}

TEST(ChatRequestTest, MaxCompletionTokensWins) {
    EXPECT_EQ(parse_ok(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":5,
                           "max_completion_tokens":9})")
                  .max_tokens,
              9);
}

TEST(ChatRequestTest, RefusalsNameTheField) {
    EXPECT_NE(parse_error("{").find("malformed JSON"), std::string::npos);
    EXPECT_NE(parse_error("[]").find("JSON object"), std::string::npos);
    EXPECT_NE(parse_error("{}").find("\"messages\" is missing"), std::string::npos);
    EXPECT_NE(parse_error(R"({"messages":[]})").find("messages: is empty"), std::string::npos);
    EXPECT_NE(
        parse_error(R"({"messages":[{"role":"robot","content":"x"}]})").find("messages[0].role"),
        std::string::npos);
    EXPECT_NE(parse_error(R"({"messages":[{"role":"user","content":"x"},
                                          {"role":"system","content":"y"}]})")
                  .find("messages[1]: a system message must come first"),
              std::string::npos);
    EXPECT_NE(parse_error(R"({"messages":[{"role":"user","content":"x"}],"temperature":-1})")
                  .find("temperature"),
              std::string::npos);
    EXPECT_NE(parse_error(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})")
                  .find("max_tokens"),
              std::string::npos);
    EXPECT_NE(
        parse_error(R"({"messages":[{"role":"user","content":"x"}],"stop":[""]})").find("stop[0]"),
        std::string::npos);
    EXPECT_NE(parse_error(R"({"messages":[{"role":"user","content":"x"}],"n":2})").find("n:"),
              std::string::npos);
    // Above the open bound as a double, on it as the sampler's float (a fuzzer finding).
    EXPECT_NE(
        parse_error(R"({"messages":[{"role":"user","content":"x"}],"top_p":1e-50})").find("top_p"),
        std::string::npos);
}

TEST(ChatRequestTest, ImageUrlsAreChecked) {
    const auto with_url = test::image_url_request;
    EXPECT_NE(parse_error(with_url("https://example.com/a.png")).find("--allowed-media-hosts"),
              std::string::npos);
    EXPECT_NE(parse_error(with_url("file:///tmp/a.png")).find("--allowed-media-dir"),
              std::string::npos);
    ParseLimits files;
    files.allow_file_urls = true;
    EXPECT_EQ(parse_ok(with_url("file:///tmp/a.png"), files).messages[0].parts[0].image.file_path,
              "/tmp/a.png");
    const std::string bad64 = parse_error(with_url("data:image/png;base64,iVB%Rw=="));
    EXPECT_NE(bad64.find("messages[0].content[0].image_url.url: invalid base64 character '%' "
                         "at offset 3"),
              std::string::npos)
        << bad64;
    EXPECT_NE(parse_error(with_url("data:text/plain;base64,aGk=")).find("not an image"),
              std::string::npos);
    EXPECT_NE(parse_error(with_url("data:image/png;base64,")).find("empty"), std::string::npos);
}

// video_url parts go through the same reader as image_url parts: data: URIs of video types
// (and animated GIFs), file:// and http(s) under the same allowances, named errors.
TEST(ChatRequestTest, VideoUrlsAreChecked) {
    const auto with_url = [](std::string_view url) {
        std::string body = test::image_url_request(url);
        for (std::size_t at = body.find("image_url"); at != std::string::npos;
             at = body.find("image_url", at))
            body.replace(at, 9, "video_url");
        return body;
    };
    const ChatRequest ok = parse_ok(with_url("data:video/mp4;base64,AAAA"));
    ASSERT_EQ(ok.messages[0].parts.size(), 1u);
    EXPECT_EQ(ok.messages[0].parts[0].kind, RequestPart::Kind::kVideo);
    EXPECT_EQ(ok.messages[0].parts[0].image.bytes.size(), 3u);
    EXPECT_EQ(ok.image_count, 1);
    EXPECT_EQ(parse_ok(with_url("data:image/gif;base64,AAAA")).messages[0].parts[0].kind,
              RequestPart::Kind::kVideo);
    EXPECT_NE(parse_error(with_url("data:image/png;base64,AAAA"))
                  .find("messages[0].content[0].video_url.url: data: URI of type 'image/png' is "
                        "not an MP4, WebM or GIF video"),
              std::string::npos);
    EXPECT_NE(parse_error(with_url("https://example.com/a.mp4")).find("http(s) video URLs"),
              std::string::npos);
    EXPECT_NE(parse_error(with_url("file:///tmp/a.mp4")).find("--allowed-media-dir"),
              std::string::npos);
    ParseLimits open;
    open.allow_file_urls = true;
    open.allowed_media_hosts = {"example.com"};
    EXPECT_EQ(parse_ok(with_url("file:///tmp/a.mp4"), open).messages[0].parts[0].image.file_path,
              "/tmp/a.mp4");
    EXPECT_EQ(
        parse_ok(with_url("https://example.com/a.mp4"), open).messages[0].parts[0].image.remote_url,
        "https://example.com/a.mp4");
    EXPECT_NE(parse_error(with_url("data:video/mp4;base64,")).find("the video is empty"),
              std::string::npos);
    EXPECT_NE(parse_error(R"({"messages":[{"role":"user","content":[{"type":"video_url"}]}]})")
                  .find("a video_url part needs \"video_url\""),
              std::string::npos);
    EXPECT_NE(parse_error(R"({"messages":[{"role":"assistant","content":[{"type":"video_url",
                  "video_url":{"url":"data:video/mp4;base64,AAAA"}}]}]})")
                  .find("videos are only allowed in user messages"),
              std::string::npos);
}

TEST(ChatRequestTest, ImageCountIsBounded) {
    std::string body = R"({"messages":[{"role":"user","content":[)";
    for (int i = 0; i < 5; ++i) {
        body += std::string(i ? "," : "") +
                R"({"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}})";
    }
    body += "]}]}";
    ParseLimits limits;
    limits.max_images = 4;
    EXPECT_NE(parse_error(body, limits).find("more than 4 images"), std::string::npos);
    limits.max_images = 5;
    EXPECT_EQ(parse_ok(body, limits).image_count, 5);
}

TEST(ChatRequestTest, ImagesOnlyInUserMessages) {
    EXPECT_NE(parse_error(R"({"messages":[{"role":"assistant","content":[{"type":"image_url",
                  "image_url":{"url":"data:image/png;base64,AAAA"}}]}]})")
                  .find("only allowed in user messages"),
              std::string::npos);
}

TEST(Base64Test, DecodesAndRejects) {
    const auto text = [](std::string_view s) {
        Result<std::vector<std::uint8_t>> r = decode_base64(s);
        EXPECT_TRUE(r.ok()) << r.status().message();
        std::string out;
        for (std::uint8_t b : r.value()) out += char(b);
        return out;
    };
    EXPECT_EQ(text("aGVsbG8="), "hello");
    EXPECT_EQ(text("aGVsbG8"), "hello");
    EXPECT_EQ(text("aGk+Lw=="), "hi>/");
    EXPECT_EQ(text(""), "");
    EXPECT_FALSE(decode_base64("aGVsbG8=x").ok());
    EXPECT_FALSE(decode_base64("a").ok());
    EXPECT_FALSE(decode_base64("aGVs bG8=").ok());
    EXPECT_FALSE(decode_base64("aG=").ok());
    EXPECT_EQ(text("aGV="), "he");
}

}  // namespace
}  // namespace qvl::serve
