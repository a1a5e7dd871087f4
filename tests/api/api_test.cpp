// The public API (include/qvl/qvl.h) over the tiny checkpoint: errors are values with the
// engine's codes, options reach the session, images given as a path, as bytes or as pixels
// give the same prompt, and generation matches the runtime it adapts.
#include <gtest/gtest.h>
#include <qvl/qvl.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "api/public_tiny.h"
#include "base/status.h"
#include "io/image.h"
#include "support/golden.h"

namespace qvl {
namespace {

using test::kPng;
using test::kTiny;
using test::tiny;

TEST(PublicApi, ErrorCodesMirrorTheEngine) {
    EXPECT_EQ(int(ErrorCode::kInternal), int(base::ErrorCode::kInternal));
    EXPECT_EQ(int(ErrorCode::kOutOfRange), int(base::ErrorCode::kOutOfRange));
    EXPECT_EQ(int(ErrorCode::kResourceExhausted), int(base::ErrorCode::kResourceExhausted));
    const Result<Model> missing = Model::load("/nonexistent/model");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
    EXPECT_NE(missing.status().message().find("/nonexistent/model"), std::string::npos);
}

TEST(PublicApi, OptionsReachTheSession) {
    Result<Session> s = Session::create(
        tiny(), {.threads = 1, .ctx_size = 64, .precision = Precision::kF32, .isa = "scalar"});
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->isa(), "scalar");
    EXPECT_EQ(s->precision(), Precision::kF32);
    EXPECT_EQ(s->context_size(), 64);
    EXPECT_EQ(s->threads(), 1);
    const Result<Session> bad = Session::create(tiny(), {.isa = "foo"});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("'foo'"), std::string::npos);
}

TEST(PublicApi, ImageAsPathBytesOrPixelsGiveTheSamePrompt) {
    Result<Session> s = Session::create(tiny(), {.threads = 1, .ctx_size = 256});
    ASSERT_TRUE(s.ok()) << s.status().message();
    std::ifstream in(kPng, std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    auto decoded = io::load_image(kPng, {});
    ASSERT_TRUE(decoded.ok());
    std::vector<std::vector<ContentPart>> variants = {
        {ContentPart::image_file(kPng)},
        {ContentPart::image_bytes(bytes, "png bytes")},
        {ContentPart::image_rgb(decoded->width, decoded->height, decoded->rgb, "pixels")}};
    std::vector<std::int32_t> first;
    for (std::vector<ContentPart>& parts : variants) {
        parts.push_back(ContentPart::from_text("Describe."));
        Result<Prompt> p = s->prepare({{.role = "user", .content = parts}});
        ASSERT_TRUE(p.ok()) << p.status().message();
        ASSERT_EQ(p->images().size(), 1u);
        EXPECT_GT(p->images()[0].tokens, 0);
        if (first.empty()) first = p->token_ids();
        EXPECT_EQ(p->token_ids(), first);
    }
    const Result<Prompt> short_rgb = s->prepare(
        {{.role = "user", .content = {ContentPart::image_rgb(4, 4, {1, 2, 3}, "tiny")}}});
    ASSERT_FALSE(short_rgb.ok());
    EXPECT_EQ(short_rgb.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(short_rgb.status().message().find("tiny"), std::string::npos);
}

TEST(PublicApi, GenerateStreamsAndFitsTheContext) {
    Result<Session> s = Session::create(tiny(), {.threads = 1, .ctx_size = 128});
    ASSERT_TRUE(s.ok()) << s.status().message();
    Result<Prompt> p = s->prepare(
        {{.role = "user",
          .content = {ContentPart::image_file(kPng), ContentPart::from_text("What is this?")}}});
    ASSERT_TRUE(p.ok()) << p.status().message();
    std::string streamed;
    GenerateOptions options{.n_predict = 8, .ignore_eos = true, .sampling = Sampling{}};
    options.on_text = [&](std::string_view piece) { streamed.append(piece); };
    Result<Generation> g = s->generate(p.value(), options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->tokens.size(), 8u);
    EXPECT_EQ(g->finish_reason, "length");
    EXPECT_EQ(g->text, streamed);
    EXPECT_EQ(g->timings.prompt_tokens, int(p->token_ids().size()));

    // Same prompt again on a fresh context: same greedy tokens.
    s->reset();
    Result<Generation> again = s->generate(p.value(), options);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->tokens, g->tokens);

    // Without reset the context holds the first turn: too much for 128 tokens.
    options.n_predict = 100;
    const Result<Generation> over = s->generate(p.value(), options);
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.status().code(), ErrorCode::kOutOfRange);
}

// ignore_eos keeps going past the end of a turn, but not past the end of a grammar: once the
// grammar has ended its end token is the only choice, and repeating it to n_predict is noise.
TEST(PublicApi, IgnoreEosStopsWhereTheGrammarEnds) {
    Result<Session> s = Session::create(tiny(), {.threads = 1, .ctx_size = 256});
    ASSERT_TRUE(s.ok()) << s.status().message();
    Result<Prompt> p = s->prepare({{.role = "user", .content = {ContentPart::from_text("Yes?")}}});
    ASSERT_TRUE(p.ok()) << p.status().message();
    GenerateOptions options{.n_predict = 24, .ignore_eos = true, .sampling = Sampling{}};
    options.grammar = R"(root ::= "yes" | "no")";
    Result<Generation> g = s->generate(p.value(), options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->finish_reason, "stop");
    EXPECT_TRUE(g->text == "yes" || g->text == "no") << g->text;
    EXPECT_LE(g->tokens.size(), 3u);
}

TEST(PublicApi, PromptsFollowTheSessionImageBudget) {
    std::vector<int> tokens;
    for (int budget : {4, 16}) {
        Result<Session> s =
            Session::create(tiny(), {.threads = 1, .ctx_size = 256, .max_image_tokens = budget});
        ASSERT_TRUE(s.ok()) << s.status().message();
        io::Image big{.width = 640, .height = 480};
        big.rgb.assign(std::size_t(big.width) * big.height * 3, 200);
        Result<Prompt> p = s->prepare(
            {{.role = "user",
              .content = {ContentPart::image_rgb(big.width, big.height, big.rgb, "big")}}});
        ASSERT_TRUE(p.ok()) << p.status().message();
        EXPECT_LE(p->images()[0].tokens, budget);
        tokens.push_back(p->images()[0].tokens);
        GenerateOptions options{.n_predict = 1};
        EXPECT_TRUE(s->generate(p.value(), options).ok());
    }
    EXPECT_LT(tokens[0], tokens[1]);  // the budget, not something else, bounds the image
}

TEST(PublicApi, PenaltiesReachTheSampler) {
    Result<Session> s = Session::create(tiny(), {.threads = 1, .ctx_size = 128});
    ASSERT_TRUE(s.ok()) << s.status().message();
    Result<Prompt> p = s->prepare({{.role = "user", .content = {ContentPart::from_text("hello")}}});
    ASSERT_TRUE(p.ok()) << p.status().message();
    // Greedy, the tiny random model repeats itself; a huge repetition penalty forbids every id
    // already seen, in the prompt or in the answer.
    GenerateOptions options{.n_predict = 12, .ignore_eos = true, .sampling = Sampling{}};
    options.sampling->repetition_penalty = 100.0f;
    Result<Generation> g = s->generate(p.value(), options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    std::vector<std::int32_t> seen = p->token_ids();
    for (std::int32_t t : g->tokens) {
        EXPECT_EQ(std::count(seen.begin(), seen.end(), t), 0) << "token " << t << " repeated";
        seen.push_back(t);
    }
    options.sampling->presence_penalty = 3.0f;  // outside OpenAI's [-2, 2]
    s->reset();
    const Result<Generation> bad = s->generate(p.value(), options);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
}

// logit_bias forces a token; logprobs report each token with its alternatives (greedy: the
// token is its own best); out-of-range values are refused.
TEST(PublicApi, LogitBiasAndLogprobs) {
    Result<Session> s = Session::create(tiny(), {.threads = 1, .ctx_size = 128});
    ASSERT_TRUE(s.ok()) << s.status().message();
    Result<Prompt> p = s->prepare({{.role = "user", .content = {ContentPart::from_text("hello")}}});
    ASSERT_TRUE(p.ok()) << p.status().message();
    GenerateOptions options{.n_predict = 5, .ignore_eos = true, .sampling = Sampling{}};
    options.sampling->logprobs = 3;
    Result<Generation> g = s->generate(p.value(), options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    ASSERT_EQ(g->logprobs.size(), g->tokens.size());
    for (std::size_t i = 0; i < g->tokens.size(); ++i) {
        const TokenLogprob& t = g->logprobs[i];
        EXPECT_EQ(t.token, g->tokens[i]);
        ASSERT_EQ(t.top.size(), 3u);
        EXPECT_EQ(t.top[0].first, t.token);
        EXPECT_EQ(t.top[0].second, t.logprob);
        EXPECT_LT(t.logprob, 0.0);
    }
    const std::int32_t forced = g->tokens[0] == 1000 ? 1001 : 1000;
    options.sampling->logprobs = -1;
    options.sampling->logit_bias = {{forced, 100.0f}};
    s->reset();
    g = s->generate(p.value(), options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_TRUE(g->logprobs.empty());
    for (const std::int32_t t : g->tokens) EXPECT_EQ(t, forced);
    for (const Sampling& bad :
         {Sampling{.logit_bias = {{forced, 101.0f}}}, Sampling{.logit_bias = {{-1, 1.0f}}},
          Sampling{.logit_bias = {{151936, 1.0f}}}, Sampling{.logprobs = 21}}) {
        s->reset();
        options.sampling = bad;
        const Result<Generation> refused = s->generate(p.value(), options);
        ASSERT_FALSE(refused.ok());
        EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
    }
}

TEST(PublicApi, Int8WeightsLoadAndGenerate) {
    Result<Model> q8 = Model::load(kTiny, {.weights = Weights::kQ8});
    ASSERT_TRUE(q8.ok()) << q8.status().message();
    Result<Session> s = Session::create(q8.value(), {.threads = 1, .ctx_size = 128});
    ASSERT_TRUE(s.ok()) << s.status().message();
    Result<Prompt> p = s->prepare({{.role = "user", .content = {ContentPart::from_text("hi")}}});
    ASSERT_TRUE(p.ok()) << p.status().message();
    GenerateOptions options{.n_predict = 4, .ignore_eos = true, .sampling = Sampling{}};
    Result<Generation> g = s->generate(p.value(), options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->tokens.size(), 4u);
}

TEST(PublicApi, CancelStopsGeneration) {
    Result<Session> s = Session::create(tiny(), {.threads = 1, .ctx_size = 128});
    ASSERT_TRUE(s.ok()) << s.status().message();
    Result<Prompt> p = s->prepare_raw("Once upon a time");
    ASSERT_TRUE(p.ok()) << p.status().message();
    std::atomic<bool> cancel{false};
    GenerateOptions options{.n_predict = 50, .ignore_eos = true, .cancel = &cancel};
    options.on_text = [&](std::string_view) { cancel.store(true); };
    Result<Generation> g = s->generate(p.value(), options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->finish_reason, "interrupted");
    EXPECT_LT(g->tokens.size(), 50u);
}

// Three turns in one session, each continuing after what the session holds: an image and a
// question answered to the length limit (its last token is not in the context), a sampled
// follow-up with penalties (counted over the new prompt only) interrupted after its first
// piece of text, then a greedy one. Tokens and context sizes are those the session gave when it
// ran the runtime's generation loop directly (f32, tiny model).
TEST(PublicApi, MultiTurnContinuesTheConversation) {
    Result<Session> s =
        Session::create(tiny(), {.threads = 1, .ctx_size = 512, .precision = Precision::kF32});
    ASSERT_TRUE(s.ok()) << s.status().message();
    Result<Prompt> first = s->prepare(
        {{.role = "user",
          .content = {ContentPart::image_file(kPng), ContentPart::from_text("What is this?")}}});
    ASSERT_TRUE(first.ok()) << first.status().message();
    GenerateOptions greedy{.n_predict = 6, .ignore_eos = true, .sampling = Sampling{}};
    Result<Generation> g1 = s->generate(first.value(), greedy);
    ASSERT_TRUE(g1.ok()) << g1.status().message();
    const int used1 = s->context_used();

    Result<Prompt> second = s->prepare_raw(
        "<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n<|im_start|>assistant\n");
    ASSERT_TRUE(second.ok()) << second.status().message();
    std::atomic<bool> cancel{false};
    GenerateOptions sampled{.n_predict = 40,
                            .ignore_eos = true,
                            .sampling = Sampling{.temperature = 0.9f,
                                                 .top_k = 40,
                                                 .seed = 11,
                                                 .repetition_penalty = 1.5f,
                                                 .presence_penalty = 0.5f},
                            .cancel = &cancel};
    int pieces = 0;
    sampled.on_text = [&](std::string_view) {
        if (++pieces == 3) cancel.store(true);
    };
    Result<Generation> g2 = s->generate(second.value(), sampled);
    ASSERT_TRUE(g2.ok()) << g2.status().message();
    const int used2 = s->context_used();

    Result<Prompt> third =
        s->prepare_raw("<|im_end|>\n<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n");
    ASSERT_TRUE(third.ok()) << third.status().message();
    greedy.sampling->repetition_penalty = 1.2f;
    Result<Generation> g3 = s->generate(third.value(), greedy);
    ASSERT_TRUE(g3.ok()) << g3.status().message();
    const int used3 = s->context_used();

    EXPECT_EQ(g1->tokens, (std::vector<std::int32_t>{53249, 73599, 107782, 57573, 55267, 55267}));
    EXPECT_EQ(g1->finish_reason, "length");
    EXPECT_EQ(g2->tokens, (std::vector<std::int32_t>{143250, 37395, 31222}));
    EXPECT_EQ(g2->finish_reason, "interrupted");
    EXPECT_GT(g1->timings.vision_ms, 0.0);
    EXPECT_EQ(g2->timings.vision_ms, 0.0);  // the first turn's image stays in the context
    EXPECT_EQ(g3->tokens, (std::vector<std::int32_t>{34835, 24396, 76558, 38655, 67210, 9186}));
    EXPECT_EQ(g3->finish_reason, "length");
    // What the context holds: every prompt and every answer token but a length-limited
    // answer's last (it was never decoded).
    const int n1 = int(first->token_ids().size()), n2 = int(second->token_ids().size());
    const int n3 = int(third->token_ids().size());
    EXPECT_EQ(used1, n1 + 5);
    EXPECT_EQ(used2, used1 + n2 + 3);
    EXPECT_EQ(used3, used2 + n3 + 5);
}

}  // namespace
}  // namespace qvl
