// The public Engine (include/qvl/qvl.h) over the tiny checkpoint: blocking generate returns the
// answer or the error, the interrupt flag and a request's own cancel flag stop it, requests
// submitted together stream and finish with the answers a Session gives alone, URL image parts
// go through the media resolver, and Model::sampling is the one rule for defaults.
#include <gtest/gtest.h>
#include <qvl/qvl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "api/public_tiny.h"
#include "support/golden.h"

namespace qvl {
namespace {

using test::kPng;
using test::kTiny;
using test::tiny;

Engine make_engine(int slots, int ctx) {
    EngineOptions eo;
    eo.session = {.threads = 1, .ctx_size = ctx, .precision = Precision::kF32};
    eo.slots = slots;
    Result<Engine> e = Engine::create(tiny(), eo);
    EXPECT_TRUE(e.ok()) << e.status().message();
    return std::move(e).value();
}

std::vector<Message> question(const std::string& text) {
    return {{.role = "user", .content = {ContentPart::from_text(text)}}};
}

Request greedy_request(const Engine& engine, const std::string& text, int max_tokens) {
    Result<Prompt> p = engine.prepare(question(text));
    EXPECT_TRUE(p.ok()) << p.status().message();
    return Request{.prompt = std::move(p).value(),
                   .max_tokens = max_tokens,
                   .ignore_eos = true,
                   .sampling = {}};
}

TEST(PublicEngine, GenerateReturnsTheAnswerOrTheError) {
    Engine engine = make_engine(1, 256);
    std::vector<std::int32_t> streamed;
    Request r = greedy_request(engine, "Hello", 5);
    r.on_piece = [&](const Piece& p) { streamed.push_back(p.token); };
    Result<Generation> done = engine.generate(std::move(r));
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(done->finish_reason, "length");
    EXPECT_EQ(done->tokens.size(), 5u);
    EXPECT_FALSE(streamed.empty());
    EXPECT_GT(done->timings.prompt_tokens, 0);
    EXPECT_GE(done->timings.total_ms, done->timings.ttft_ms);

    EXPECT_EQ(engine.generate(Request{}).status().code(), ErrorCode::kInvalidArgument);
    Request bad = greedy_request(engine, "Hello", 1);
    bad.sampling.repetition_penalty = 0.0f;
    EXPECT_EQ(engine.generate(std::move(bad)).status().code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(engine.generate(greedy_request(engine, "Hello", 2)).ok());  // serves on
    EXPECT_EQ(engine.stats().slots, 1);
    EXPECT_EQ(engine.stats().slots_busy, 0);
}

TEST(PublicEngine, InterruptAndCancelFlagsStopIt) {
    Engine engine = make_engine(1, 4096);
    std::atomic<bool> stop{false};
    Request r = greedy_request(engine, "Count", 4000);
    r.on_piece = [&](const Piece&) { stop.store(true); };
    Result<Generation> done = engine.generate(std::move(r), &stop);
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(done->finish_reason, "cancelled");
    EXPECT_LT(done->tokens.size(), 4000u);

    std::atomic<bool> cancel{false};
    std::int32_t last = -1;
    Request own = greedy_request(engine, "Count", 50);
    own.cancel = &cancel;
    own.on_piece = [&](const Piece& p) {
        last = p.token;
        cancel.store(true);
    };
    done = engine.generate(std::move(own));
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(done->finish_reason, "cancelled");
    ASSERT_FALSE(done->tokens.empty());
    EXPECT_EQ(done->tokens.back(), last);  // nothing sampled after the flag was seen
}

// Three requests on two slots: each streams, finishes once, and answers what a Session gives
// for it alone (a sequence's tokens never depend on what runs beside it).
TEST(PublicEngine, ConcurrentRequestsAnswerAsAlone) {
    const std::vector<std::string> texts = {"One", "Two two", "Three three three"};
    std::vector<std::string> alone;
    for (const std::string& t : texts) {
        Result<Session> s =
            Session::create(tiny(), {.threads = 1, .ctx_size = 256, .precision = Precision::kF32});
        ASSERT_TRUE(s.ok()) << s.status().message();
        Result<Prompt> p = s->prepare(question(t));
        ASSERT_TRUE(p.ok());
        Result<Generation> g =
            s->generate(p.value(), {.n_predict = 8, .ignore_eos = true, .sampling = Sampling{}});
        ASSERT_TRUE(g.ok()) << g.status().message();
        alone.push_back(g->text);
    }
    Engine engine = make_engine(2, 256);
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> streamed(texts.size()), done(texts.size());
    int finished = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        Request r = greedy_request(engine, texts[i], 8);
        r.on_piece = [&, i](const Piece& p) {
            const std::lock_guard<std::mutex> lock(mu);
            streamed[i] += p.text;
        };
        r.on_done = [&, i](const Generation& g) {
            {
                const std::lock_guard<std::mutex> lock(mu);
                done[i] = g.text;
                ++finished;
            }
            cv.notify_all();
        };
        ASSERT_TRUE(engine.submit(std::move(r)).ok());
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished == int(texts.size()); });
    for (std::size_t i = 0; i < texts.size(); ++i) {
        EXPECT_EQ(done[i], alone[i]) << texts[i];
        EXPECT_EQ(streamed[i], done[i]) << texts[i];
    }
}

// Engine::stats counts what /metrics shows: requests queued and refused (by the API's checks
// and by the runtime's), finished by reason, and their tokens (a group's prompt once).
TEST(PublicEngine, StatsCountRequestsAndTokens) {
    Engine engine = make_engine(1, 4096);
    Result<Generation> a = engine.generate(greedy_request(engine, "Hello", 5));
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_EQ(a->finish_reason, "length");
    ASSERT_FALSE(a->text.empty());
    Request stopping = greedy_request(engine, "Hello", 50);
    // Greedy: the same text comes again, and its first character stops it.
    std::size_t first = 1;
    while (first < a->text.size() && (std::uint8_t(a->text[first]) & 0xc0) == 0x80) ++first;
    stopping.stop = {a->text.substr(0, first)};
    Result<Generation> b = engine.generate(std::move(stopping));
    ASSERT_TRUE(b.ok()) << b.status().message();
    ASSERT_EQ(b->finish_reason, "stop");
    std::atomic<bool> stop{false};
    Request long_one = greedy_request(engine, "Count", 4000);
    long_one.on_piece = [&](const Piece&) { stop.store(true); };
    Result<Generation> c = engine.generate(std::move(long_one), &stop);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_EQ(c->finish_reason, "cancelled");
    Request bad = greedy_request(engine, "Hello", 1);
    bad.sampling.repetition_penalty = 0.0f;  // refused by the API's checks
    EXPECT_FALSE(engine.submit(std::move(bad)).ok());
    EXPECT_FALSE(engine.generate(Request{}).ok());  // refused by the runtime: empty
    std::vector<Request> group;
    for (int i = 0; i < 2; ++i) group.push_back(greedy_request(engine, "Two", 3));
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Generation> choices;
    for (Request& r : group) {
        r.on_done = [&](const Generation& g) {
            {
                const std::lock_guard<std::mutex> lock(mu);
                choices.push_back(g);
            }
            cv.notify_all();
        };
    }
    ASSERT_TRUE(engine.submit_group(std::move(group)).ok());
    {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return choices.size() == 2; });
    }
    const Engine::Stats s = engine.stats();
    EXPECT_EQ(s.submitted, 5u);
    EXPECT_EQ(s.refused, 2u);
    EXPECT_EQ(s.stopped, 1u);
    EXPECT_EQ(s.length, 3u);
    EXPECT_EQ(s.cancelled, 1u);
    EXPECT_EQ(s.failed, 0u);
    const std::vector<const Generation*> all = {&a.value(), &b.value(), &c.value(), &choices[0],
                                                &choices[1]};
    std::uint64_t generated = 0, cached = 0;
    for (const Generation* g : all) {
        generated += g->tokens.size();
        cached += std::uint64_t(g->timings.cached_prompt_tokens);
    }
    EXPECT_EQ(s.generated_tokens, generated);
    EXPECT_EQ(s.cached_prompt_tokens, cached);
    EXPECT_GT(cached, 0u);  // "Hello" again: the slot's KV holds its prefix
    EXPECT_EQ(s.prompt_tokens,
              std::uint64_t(a->timings.prompt_tokens + b->timings.prompt_tokens +
                            c->timings.prompt_tokens + choices[0].timings.prompt_tokens));
    EXPECT_EQ(s.image_cache_hits, 0u);
    EXPECT_EQ(s.slots_busy, 0);
    EXPECT_EQ(s.queue_length, 0);
}

TEST(PublicEngine, UrlPartsGoThroughTheMediaResolver) {
    Engine plain = make_engine(1, 512);
    const Result<Prompt> by_path =
        plain.prepare({{.role = "user", .content = {ContentPart::image_file(kPng)}}});
    ASSERT_TRUE(by_path.ok()) << by_path.status().message();
    // Without a resolver: file:// only.
    const Result<Prompt> by_url = plain.prepare(
        {{.role = "user", .content = {ContentPart::image_url("file://" + kPng, "part0")}}});
    ASSERT_TRUE(by_url.ok()) << by_url.status().message();
    EXPECT_EQ(by_url->token_ids(), by_path->token_ids());
    const Result<Prompt> remote = plain.prepare(
        {{.role = "user", .content = {ContentPart::image_url("https://x/y.png", "part0")}}});
    ASSERT_FALSE(remote.ok());
    EXPECT_NE(remote.status().message().find("part0"), std::string::npos);

    EngineOptions eo;
    eo.session = {.threads = 1, .ctx_size = 512, .precision = Precision::kF32};
    eo.resolve_media = [](const ContentPart& part) -> Result<ContentPart> {
        if (part.url == "mine:ok") return ContentPart::image_file(kPng);
        if (part.url == "mine:missing") return ContentPart::image_file("/nonexistent/x.png");
        return Status(ErrorCode::kInvalidArgument, part.path + ": refused");
    };
    Result<Engine> custom = Engine::create(tiny(), eo);
    ASSERT_TRUE(custom.ok()) << custom.status().message();
    const auto prepare = [&](const std::string& url) {
        return custom->prepare(
            {{.role = "user", .content = {ContentPart::image_url(url, "messages[0]")}}});
    };
    const Result<Prompt> ok = prepare("mine:ok");
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    EXPECT_EQ(ok->token_ids(), by_path->token_ids());
    EXPECT_EQ(prepare("mine:no").status().message(), "messages[0]: refused");
    const Result<Prompt> missing = prepare("mine:missing");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
    EXPECT_EQ(missing.status().message().rfind("messages[0]: ", 0), 0u)
        << missing.status().message();
}

TEST(PublicEngine, ModelSamplingIsGenerationConfigThenOverrides) {
    const Sampling base = tiny().sampling({.seed = 7});
    EXPECT_EQ(base.seed, 7u);
    const Sampling s =
        tiny().sampling({.temperature = 0.5f, .top_k = 3, .seed = 7, .presence_penalty = 1.0f});
    EXPECT_EQ(s.temperature, 0.5f);
    EXPECT_EQ(s.top_k, 3);
    EXPECT_EQ(s.top_p, base.top_p);
    EXPECT_EQ(s.repetition_penalty, base.repetition_penalty);
    EXPECT_EQ(s.presence_penalty, 1.0f);
    EXPECT_EQ(s.frequency_penalty, 0.0f);
}

}  // namespace
}  // namespace qvl
