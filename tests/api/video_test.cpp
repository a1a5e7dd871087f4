// Video content parts through the public API on the tiny checkpoint (which has no
// video_preprocessor_config.json, so Qwen3VLVideoProcessor's defaults hold): prompt ids equal to
// the processor's (tests/data/videos/cases.json), a file and its bytes give one prompt, the
// part's fps and max_frames change the sampling, bad videos are errors naming the video, a
// generation runs, the feature cache is hit by the same clip and sampling only, and a
// conversation with a video continues from its cached prefix as a cold run of it does.
#include <gtest/gtest.h>
#include <qvl/qvl.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "api/internals.h"
#include "api/public_tiny.h"
#include "support/golden.h"

namespace qvl {
namespace {

using test::tiny;

const std::string kVideos = (test::test_data_dir() / "videos").string();
const std::string kShapes = kVideos + "/shapes_100x62_12fps.mp4";

std::vector<std::uint8_t> file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<Message> ask(ContentPart video, const std::string& text = "Describe this video.") {
    return {{.role = "user", .content = {std::move(video), ContentPart::from_text(text)}}};
}

std::vector<std::int32_t> expected_ids(const std::string& name) {
    const Result<std::string> text = read_text_file(kVideos + "/cases.json");
    EXPECT_TRUE(text.ok()) << text.status().message();
    const Result<JsonValue> cases = parse_json(text.value(), "cases.json");
    EXPECT_TRUE(cases.ok()) << cases.status().message();
    std::vector<std::int32_t> ids;
    for (const JsonValue& c : cases->find("cases")->items()) {
        if (c.find("name")->as_string() != name) continue;
        for (const JsonValue& v : c.find("input_ids")->items()) ids.push_back(int(v.as_int()));
    }
    return ids;
}

SessionOptions small() { return {.threads = 1, .ctx_size = 1024, .precision = Precision::kF32}; }

TEST(PublicVideo, PromptIdsMatchTheProcessor) {
    for (const auto& [name, clip] : {std::pair{"shapes_default", "shapes_100x62_12fps.mp4"},
                                     std::pair{"narrow_default", "narrow_24x72_3fps.mp4"}}) {
        SCOPED_TRACE(name);
        const Result<Prompt> p =
            tiny().prepare(ask(ContentPart::video_file(kVideos + "/" + clip)), small());
        ASSERT_TRUE(p.ok()) << p.status().message();
        EXPECT_EQ(p->token_ids(), expected_ids(name));
    }
    const Result<Prompt> p = tiny().prepare(ask(ContentPart::video_file(kShapes)), small());
    ASSERT_TRUE(p.ok()) << p.status().message();
    ASSERT_EQ(p->images().size(), 1u);
    const ImageInfo& v = p->images()[0];
    EXPECT_TRUE(v.video);
    EXPECT_EQ(v.name, kShapes);
    EXPECT_EQ(v.width, 100);
    EXPECT_EQ(v.height, 62);
    EXPECT_EQ(v.tokens, 3 * 8 * 14 / 4);  // grid 3x8x14 (cases.json), merge 2
    EXPECT_EQ(v.sample_fps, 2.0);
    // pixel_values_videos: every frame pair's rows.
    int rows = 0, cols = 0;
    const std::size_t values = p->pixel_values(0, &rows, &cols).size();
    EXPECT_EQ(values, std::size_t(rows) * std::size_t(cols));
    EXPECT_EQ(rows, 3 * 8 * 14);
    EXPECT_EQ(cols, 3 * 2 * 16 * 16);
}

TEST(PublicVideo, BytesAndFileAndUrlGiveOnePromptAndSamplingOverrides) {
    const Result<Prompt> file = tiny().prepare(ask(ContentPart::video_file(kShapes)), small());
    ASSERT_TRUE(file.ok()) << file.status().message();
    const Result<Prompt> bytes =
        tiny().prepare(ask(ContentPart::video_bytes(file_bytes(kShapes), "upload")), small());
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    EXPECT_EQ(bytes->token_ids(), file->token_ids());
    EXPECT_EQ(bytes->images()[0].name, "upload");
    const Result<Prompt> url =
        tiny().prepare(ask(ContentPart::video_url("file://" + kShapes, "part0")), small());
    ASSERT_TRUE(url.ok()) << url.status().message();
    EXPECT_EQ(url->token_ids(), file->token_ids());

    ContentPart slow = ContentPart::video_file(kShapes);
    slow.video_fps = 1;
    const Result<Prompt> one_fps = tiny().prepare(ask(slow), small());
    ASSERT_TRUE(one_fps.ok()) << one_fps.status().message();
    EXPECT_LT(one_fps->images()[0].frames, file->images()[0].frames);
    EXPECT_EQ(one_fps->images()[0].sample_fps, 1.0);
    ContentPart few = ContentPart::video_file(kShapes);
    few.video_max_frames = 2;
    const Result<Prompt> two = tiny().prepare(ask(few), small());
    ASSERT_TRUE(two.ok()) << two.status().message();
    EXPECT_EQ(two->images()[0].frames, 2);
    few.video_fps = -1;
    const Result<Prompt> bad = tiny().prepare(ask(few), small());
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
}

TEST(PublicVideo, BadVideosAreErrorsNamingThem) {
    struct Bad {
        ContentPart part;
        ErrorCode code;
        std::string fragment;
    };
    const std::vector<Bad> bad = {
        {ContentPart::video_file(kVideos + "/missing.mp4"), ErrorCode::kNotFound, "missing.mp4"},
        {ContentPart::video_bytes({'n', 'o', 't', ' ', 'a', ' ', 'v', 'i', 'd', 'e', 'o'}, "junk"),
         ErrorCode::kUnsupported, "junk"},
        {ContentPart::video_file(kVideos + "/audio_only.mp4"), ErrorCode::kUnsupported,
         "audio_only.mp4"},
        {ContentPart::video_file(kVideos + "/mpeg2_32x32.mp4"), ErrorCode::kUnsupported,
         "mpeg2_32x32.mp4"},
        {ContentPart::video_url("https://x/v.mp4", "messages[0].content[0]"),
         ErrorCode::kUnsupported, "messages[0].content[0]: only file:// video URLs"},
    };
    for (const Bad& b : bad) {
        const Result<Prompt> p = tiny().prepare(ask(b.part), small());
        ASSERT_FALSE(p.ok()) << b.fragment;
        EXPECT_EQ(p.status().code(), b.code) << p.status().message();
        EXPECT_NE(p.status().message().find(b.fragment), std::string::npos) << p.status().message();
    }
    // A truncated clip: the decoder's error, named.
    std::vector<std::uint8_t> cut = file_bytes(kShapes);
    cut.resize(cut.size() / 2);
    const Result<Prompt> p = tiny().prepare(ask(ContentPart::video_bytes(cut, "cut.mp4")), small());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().message().rfind("cut.mp4", 0), 0u) << p.status().message();
}

Generation run(Engine& engine, const Result<Prompt>& prompt) {
    EXPECT_TRUE(prompt.ok()) << prompt.status().message();
    Result<Generation> g = engine.generate(
        {.prompt = prompt.value(), .max_tokens = 4, .ignore_eos = true, .sampling = {}});
    EXPECT_TRUE(g.ok()) << g.status().message();
    return g.ok() ? std::move(g).value() : Generation{};
}

TEST(PublicVideo, FeatureCacheKeysOnContentAndSampling) {
    EngineOptions eo;
    eo.session = small();
    Result<Engine> engine = Engine::create(tiny(), eo);
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    const Generation first =
        run(engine.value(), engine->prepare(ask(ContentPart::video_file(kShapes))));
    EXPECT_EQ(first.timings.image_cache_hits, 0);
    EXPECT_GT(first.timings.vision_ms, 0.0);
    // Not the slot's prefix (that would skip the vision tower anyway): the cache.
    engine->forget_prefixes();
    const Generation again =
        run(engine.value(), engine->prepare(ask(ContentPart::video_file(kShapes))));
    EXPECT_EQ(again.timings.image_cache_hits, 3);  // one per frame pair
    EXPECT_EQ(again.tokens, first.tokens);
    engine->forget_prefixes();
    ContentPart other = ContentPart::video_file(kShapes);
    other.video_fps = 1;
    const Generation slower = run(engine.value(), engine->prepare(ask(other)));
    EXPECT_EQ(slower.timings.image_cache_hits, 0);
    EXPECT_FALSE(slower.tokens.empty());
}

TEST(PublicVideo, ConversationWithAVideoContinuesAsAColdRun) {
    Result<Session> s = Session::create(tiny(), small());
    ASSERT_TRUE(s.ok()) << s.status().message();
    GenerateOptions greedy{.n_predict = 4, .ignore_eos = true, .sampling = Sampling{}};
    const Result<Prompt> first = s->prepare(ask(ContentPart::video_file(kShapes)));
    ASSERT_TRUE(first.ok()) << first.status().message();
    const Result<Generation> g1 = s->generate(first.value(), greedy);
    ASSERT_TRUE(g1.ok()) << g1.status().message();
    const std::string turn =
        "<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n"
        "<|im_start|>assistant\n";
    const Result<Prompt> second = s->prepare_raw(turn);
    ASSERT_TRUE(second.ok()) << second.status().message();
    const Result<Generation> g2 = s->generate(second.value(), greedy);
    ASSERT_TRUE(g2.ok()) << g2.status().message();
    EXPECT_EQ(g2->timings.vision_ms, 0.0);  // the video stays in the context

    // The same conversation as one cold prompt: the first turn, its answer as the context holds
    // it (a length-limited answer's last token was never decoded), the second turn.
    Prompt whole = first.value();
    std::vector<std::int32_t>& ids = whole.impl().prepared.ids;
    ids.insert(ids.end(), g1->tokens.begin(), g1->tokens.end() - 1);
    ids.insert(ids.end(), second->token_ids().begin(), second->token_ids().end());
    EngineOptions eo;
    eo.session = small();
    Result<Engine> cold = Engine::create(tiny(), eo);
    ASSERT_TRUE(cold.ok()) << cold.status().message();
    const Result<Generation> c =
        cold->generate({.prompt = whole, .max_tokens = 4, .ignore_eos = true, .sampling = {}});
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->tokens, g2->tokens);
    EXPECT_GT(g2->timings.cached_prompt_tokens, 0);
}

}  // namespace
}  // namespace qvl
