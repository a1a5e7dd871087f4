// Chat template, --messages parsing and image-pad expansion against the golden cases
// (tests/data/golden/*: case.json -> summary.json prompt/input_ids, golden.safetensors
// input_ids_unexpanded), plus the template's system and multi-turn behaviour.
#include "text/chat_template.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "text/tokenizer.h"

namespace qvl::text {
namespace {

const std::filesystem::path kData(QVL_TEST_DATA_DIR);

const Tokenizer& tok() {
    static const Tokenizer* t = [] {
        auto r = Tokenizer::load(kData / "tiny-qwen3vl");
        if (!r.ok()) {
            ADD_FAILURE() << r.status().message();
            std::abort();
        }
        return new Tokenizer(std::move(r).value());
    }();
    return *t;
}

std::vector<std::int32_t> int_list(const io::JsonValue& v) {
    std::vector<std::int32_t> out;
    for (const io::JsonValue& x : v.items()) out.push_back(std::int32_t(x.as_int()));
    return out;
}

// Reads one I64 tensor of a safetensors file (8-byte header length, JSON header, data).
std::vector<std::int32_t> read_i64(const std::filesystem::path& path, const std::string& name) {
    auto bytes = io::read_text_file(path);
    EXPECT_TRUE(bytes.ok());
    if (!bytes.ok()) return {};
    std::uint64_t header_len = 0;
    std::memcpy(&header_len, bytes->data(), 8);
    auto header = io::parse_json(std::string_view(*bytes).substr(8, header_len), path.string());
    EXPECT_TRUE(header.ok());
    const io::JsonValue* t = header->find(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return {};
    EXPECT_EQ(t->find("dtype")->as_string(), "I64");
    const auto& off = t->find("data_offsets")->items();
    const std::size_t begin = 8 + header_len + std::size_t(off[0].as_int());
    const std::size_t n = std::size_t(off[1].as_int() - off[0].as_int()) / 8;
    std::vector<std::int32_t> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::int64_t v;
        std::memcpy(&v, bytes->data() + begin + 8 * i, 8);
        out[i] = std::int32_t(v);
    }
    return out;
}

std::vector<std::filesystem::path> golden_cases() {
    std::vector<std::filesystem::path> dirs;
    for (const auto& e : std::filesystem::directory_iterator(kData / "golden")) {
        if (std::filesystem::exists(e.path() / "case.json")) dirs.push_back(e.path());
    }
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

TEST(ChatTemplate, ReproducesEveryGoldenPromptAndIds) {
    const auto cases = golden_cases();
    ASSERT_GE(cases.size(), 4u);
    for (const auto& dir : cases) {
        SCOPED_TRACE(dir.filename().string());
        auto summary = io::read_json_file(dir / "summary.json");
        ASSERT_TRUE(summary.ok());
        auto messages = load_messages_file(dir / "case.json");
        ASSERT_TRUE(messages.ok()) << messages.status().message();

        const std::string prompt = render_chat(*messages);
        EXPECT_EQ(prompt, summary->find("prompt")->as_string());

        std::vector<int> image_tokens;
        std::size_t k = 0;
        for (const io::JsonValue& img : summary->find("images")->items()) {
            image_tokens.push_back(int(img.find("num_image_tokens")->as_int()));
            // Paths in case.json are relative to the case folder.
            std::size_t seen = 0;
            for (const ChatMessage& m : *messages) {
                for (const ChatPart& p : m.parts) {
                    if (p.kind != ChatPart::Kind::kImage || seen++ != k) continue;
                    const auto expect = (dir / img.find("file")->as_string()).lexically_normal();
                    EXPECT_EQ(std::filesystem::path(p.image_path), expect);
                    EXPECT_TRUE(std::filesystem::exists(p.image_path)) << p.image_path;
                }
            }
            ++k;
        }

        auto ids = tok().encode(prompt);
        ASSERT_TRUE(ids.ok()) << ids.status().message();
        EXPECT_EQ(*ids, read_i64(dir / "golden.safetensors", "input_ids_unexpanded"));
        auto expanded = expand_image_pads(*ids, tok().token_id("<|image_pad|>"), image_tokens);
        ASSERT_TRUE(expanded.ok()) << expanded.status().message();
        EXPECT_EQ(*expanded, int_list(*summary->find("input_ids")));
        EXPECT_EQ(*expanded, read_i64(dir / "golden.safetensors", "input_ids"));

        // The reference continuation decodes to the reference text.
        EXPECT_EQ(tok().decode(int_list(*summary->find("generated_ids"))),
                  summary->find("generated_text")->as_string());
    }
}

ChatMessage text_message(std::string role, std::string text) {
    return {std::move(role), {{ChatPart::Kind::kText, std::move(text), {}}}};
}

TEST(ChatTemplate, SystemAndMultiTurnFollowTheJinjaTemplate) {
    const ChatPart image{ChatPart::Kind::kImage, {}, "a.png"};
    const ChatPart hi{ChatPart::Kind::kText, "Hi", {}};
    const std::vector<ChatMessage> messages = {
        text_message("system", "You are terse."),
        {"user", {image, hi, image}},
        {"assistant", {{ChatPart::Kind::kText, "Two ", {}}, {ChatPart::Kind::kText, "cats.", {}}}},
        text_message("user", "And now?"),
    };
    EXPECT_EQ(render_chat(messages),
              "<|im_start|>system\nYou are terse.<|im_end|>\n"
              "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Hi"
              "<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n"
              "<|im_start|>assistant\nTwo cats.<|im_end|>\n"
              "<|im_start|>user\nAnd now?<|im_end|>\n"
              "<|im_start|>assistant\n");
    EXPECT_EQ(render_chat(std::span(messages).first(1), false),
              "<|im_start|>system\nYou are terse.<|im_end|>\n");
    // As in the Jinja template: a later system message and images outside user turns vanish.
    const std::vector<ChatMessage> odd = {
        text_message("user", "a"), text_message("system", "ignored"), {"assistant", {image, hi}}};
    EXPECT_EQ(render_chat(odd, false),
              "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nHi<|im_end|>\n");
    EXPECT_EQ(render_chat({}, true), "<|im_start|>assistant\n");
}

TEST(ChatTemplate, ExpandImagePadsChecksCounts) {
    const std::vector<std::int32_t> ids = {1, 9, 2, 9, 3};
    const std::vector<int> counts = {2, 3};
    auto r = expand_image_pads(ids, 9, counts);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, (std::vector<std::int32_t>{1, 9, 9, 2, 9, 9, 9, 3}));
    const std::vector<int> one = {2};
    EXPECT_EQ(expand_image_pads(ids, 9, one).status().code(), base::ErrorCode::kInvalidArgument);
    const std::vector<int> zero = {0, 1};
    EXPECT_EQ(expand_image_pads(ids, 9, zero).status().code(), base::ErrorCode::kInvalidArgument);
    EXPECT_TRUE(expand_image_pads({}, 9, {}).ok());
}

class MessagesFile : public testing::Test {
  protected:
    void SetUp() override {
        // Unique per test and process: ctest runs tests in parallel processes.
        dir_ = std::filesystem::path(testing::TempDir()) /
               (std::string("qvl_messages_") +
                testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                std::to_string(::getpid()));
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    base::Result<std::vector<ChatMessage>> load(const std::string& json) {
        std::ofstream(dir_ / "m.json") << json;
        return load_messages_file(dir_ / "m.json");
    }
    std::filesystem::path dir_;
};

TEST_F(MessagesFile, ParsesBothShapesAndResolvesPaths) {
    auto m = load(R"([{"role": "system", "content": "S"},
        {"role": "user", "content": [{"type": "text", "text": "A"}, {"type": "image", "image": "x.png"},
                                     {"image": "/abs/y.png"}, {"type": "image_url", "image_url": {"url": "file://z.png"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "B"}]}])");
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->size(), 3u);
    EXPECT_EQ((*m)[0].role, "system");
    ASSERT_EQ((*m)[1].parts.size(), 4u);
    EXPECT_EQ((*m)[1].parts[0].text, "A");
    EXPECT_EQ((*m)[1].parts[1].image_path, (dir_ / "x.png").string());
    EXPECT_EQ((*m)[1].parts[2].image_path, "/abs/y.png");
    EXPECT_EQ((*m)[1].parts[3].image_path, (dir_ / "z.png").string());
    EXPECT_EQ(
        render_chat(*m),
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nA"
        "<|vision_start|><|image_pad|><|vision_end|><|vision_start|><|image_pad|><|vision_end|>"
        "<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n"
        "<|im_start|>assistant\nB<|im_end|>\n<|im_start|>assistant\n");

    m = load(R"({"other": 1, "messages": [{"role": "user", "content": "hi"}]})");
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(render_chat(*m), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

// Video items in the order given among images and text; the template's video wrapper (the
// processor replaces it by timestamps and pads, image/video_preprocess.h).
TEST_F(MessagesFile, ParsesVideoItems) {
    auto m = load(R"([{"role": "user", "content": [{"type": "video", "video": "v.mp4"},
        {"type": "image", "image": "x.png"}, {"type": "video_url", "video_url": {"url": "file:///a/w.webm"}},
        {"type": "text", "text": "Q"}]}])");
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ((*m)[0].parts.size(), 4u);
    EXPECT_EQ((*m)[0].parts[0].kind, ChatPart::Kind::kVideo);
    EXPECT_EQ((*m)[0].parts[0].image_path, (dir_ / "v.mp4").string());
    EXPECT_EQ((*m)[0].parts[1].kind, ChatPart::Kind::kImage);
    EXPECT_EQ((*m)[0].parts[2].kind, ChatPart::Kind::kVideo);
    EXPECT_EQ((*m)[0].parts[2].image_path, "/a/w.webm");
    EXPECT_EQ(render_chat(*m),
              "<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>"
              "<|vision_start|><|image_pad|><|vision_end|>"
              "<|vision_start|><|video_pad|><|vision_end|>Q<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(MessagesFile, RejectsBadInputNamingTheElement) {
    struct Bad {
        const char* json;
        base::ErrorCode code;
        const char* fragment;
    };
    const Bad bad[] = {
        {R"({"x": 1})", base::ErrorCode::kInvalidArgument, "\"messages\""},
        {"[]", base::ErrorCode::kInvalidArgument, "no messages"},
        {R"([{"role": "robot", "content": "x"}])", base::ErrorCode::kInvalidArgument,
         "messages[0]: role \"robot\""},
        {R"([{"role": "user", "content": "a"}, {"role": "system", "content": "s"}])",
         base::ErrorCode::kInvalidArgument, "messages[1]: a system message must be the first"},
        {R"([{"role": "user"}])", base::ErrorCode::kInvalidArgument, "messages[0].content"},
        {R"([{"role": "user", "content": [{"type": "text", "text": 5}]}])",
         base::ErrorCode::kInvalidArgument, "messages[0].content[0].text"},
        {R"([{"role": "user", "content": [{"type": "text"}, {"foo": 1}]}])",
         base::ErrorCode::kInvalidArgument, "messages[0].content[0]: neither"},
        {R"([{"role": "assistant", "content": [{"type": "image", "image": "a.png"}]}])",
         base::ErrorCode::kInvalidArgument, "messages[0].content[0]: images are only allowed"},
        {R"([{"role": "user", "content": [{"type": "image"}]}])", base::ErrorCode::kInvalidArgument,
         "messages[0].content[0]: image item without"},
        {R"([{"role": "assistant", "content": [{"type": "video", "video": "v.mp4"}]}])",
         base::ErrorCode::kInvalidArgument, "messages[0].content[0]: videos are only allowed"},
        {R"([{"role": "user", "content": [{"type": "video", "video": "data:video/mp4,x"}]}])",
         base::ErrorCode::kUnsupported, "local video files"},
        {R"([{"role": "user", "content": [{"type": "video"}]}])", base::ErrorCode::kInvalidArgument,
         "messages[0].content[0]: video item without"},
        {R"([{"role": "user", "content": [{"type": "image", "image": "https://x/y.png"}]}])",
         base::ErrorCode::kUnsupported, "local image files"},
        {R"([{"role": "user", "content": "x", "tool_calls": [{"name": "f", "arguments": {}}]}])",
         base::ErrorCode::kInvalidArgument,
         "messages[0]: only assistant messages carry tool_calls"},
        {R"([{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}])",
         base::ErrorCode::kInvalidArgument, "messages[0].tool_calls[0]: expected a function"},
        {R"([{"role": "tool", "content": [{"type": "image", "image": "a.png"}]}])",
         base::ErrorCode::kInvalidArgument, "messages[0].content[0]: images are only allowed"},
        {R"([{"role": "user", "content": "x"}, )", base::ErrorCode::kCorruptFile, "m.json"},
    };
    for (const Bad& b : bad) {
        const auto r = load(b.json);
        ASSERT_FALSE(r.ok()) << b.json;
        EXPECT_EQ(r.status().code(), b.code) << b.json << " -> " << r.status().message();
        EXPECT_NE(r.status().message().find(b.fragment), std::string::npos)
            << b.json << " -> " << r.status().message();
        EXPECT_NE(r.status().message().find("m.json"), std::string::npos) << r.status().message();
    }
    const auto missing = load_messages_file(dir_ / "nope.json");
    EXPECT_EQ(missing.status().code(), base::ErrorCode::kNotFound);
}

}  // namespace
}  // namespace qvl::text
