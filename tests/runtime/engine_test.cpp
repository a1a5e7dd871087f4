// The multi-sequence Engine on the tiny checkpoint: every golden case served at once on four
// slots, in every tier and named precision, gives greedy tokens that follow the float64
// reference (the margin rule of support/reference_steps.h) and exactly what a single
// generate() gives;
// cancel frees the slot; full queues, long prompts and over-budget arenas are refused.
#include "runtime/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/image_cache.h"
#include "runtime/session.h"
#include "support/cpu_skip.h"
#include "support/golden.h"
#include "support/reference_generate.h"
#include "support/reference_steps.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

using test::generate;
using test::GenerateHooks;
using test::GenerateResult;

// Collects results; wait() blocks until n requests are done.
struct Results {
    std::mutex mu;
    std::condition_variable cv;
    std::map<RequestId, RequestResult> done;
    std::map<RequestId, std::string> streamed;

    void wait(std::size_t n) {
        std::unique_lock<std::mutex> lock(mu);
        ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return done.size() >= n; }))
            << "requests did not finish";
    }
};

Request make_request(Results& results, RequestId* id_slot, PreparedPrompt prompt, int n_predict) {
    Request r;
    r.prompt = std::move(prompt);
    r.params.n_predict = n_predict;
    r.params.ignore_eos = true;
    r.on_text = [&results, id_slot](std::string_view piece, std::int32_t) {
        const std::lock_guard<std::mutex> lock(results.mu);
        results.streamed[*id_slot].append(piece);
    };
    r.on_done = [&results, id_slot](const RequestResult& res) {
        {
            const std::lock_guard<std::mutex> lock(results.mu);
            results.done[*id_slot] = res;
        }
        results.cv.notify_all();
    };
    return r;
}

std::unique_ptr<Engine> make_engine(
    int slots, Precision precision, int ctx = 256,
    double admission_budget_ms = EngineOptions{}.admission_budget_ms,
    std::optional<kernels::Isa> isa = std::nullopt) {
    EngineOptions eo;
    eo.threads = 2;
    eo.slots = slots;
    eo.ctx_size = ctx;
    eo.precision = precision;
    eo.admission_budget_ms = admission_budget_ms;
    // The SessionOptions overload takes threads, context and precision from so, not eo.
    SessionOptions so;
    so.threads = eo.threads;
    so.ctx_size = eo.ctx_size;
    so.precision = eo.precision;
    so.isa = isa;
    auto e = Engine::create(test_util::tiny_model(), eo, so);
    EXPECT_TRUE(e.ok()) << e.status().message();
    return e.ok() ? std::move(e).value() : nullptr;
}

class EngineGolden : public ::testing::TestWithParam<std::tuple<Precision, kernels::Isa>> {};

TEST_P(EngineGolden, FourSlotsGiveTheSingleRunOutput) {
    const auto [precision, isa] = GetParam();
    QVL_SKIP_UNLESS_CPU(isa);
    const std::vector<std::string> names = test::golden_case_names();
    auto engine = make_engine(4, precision, 256, EngineOptions{}.admission_budget_ms, isa);
    ASSERT_NE(engine, nullptr);
    ASSERT_EQ(engine->isa(), isa);
    Results results;
    // Ids are known only after submit returns; callbacks read them through stable slots.
    std::vector<RequestId> ids(names.size() * 2, 0);
    std::mutex submit_mu;
    for (std::size_t i = 0; i < ids.size(); ++i) {  // every case twice: more requests than slots
        const std::lock_guard<std::mutex> lock(results.mu);
        auto id = engine->submit(
            make_request(results, &ids[i], test_util::case_prompt(names[i % names.size()]), 16));
        ASSERT_TRUE(id.ok()) << id.status().message();
        ids[i] = id.value();
    }
    results.wait(ids.size());
    EXPECT_EQ(engine->stats().slots_busy, 0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::string& name = names[i % names.size()];
        SCOPED_TRACE(name);
        const RequestResult& r = results.done.at(ids[i]);
        EXPECT_EQ(r.finish_reason, "length") << r.error.message();
        // The single-conversation path with the same settings.
        SessionOptions so;
        so.threads = 1;
        so.ctx_size = 256;
        so.precision = precision;
        so.isa = isa;
        auto session = Session::create(test_util::tiny_model(), so);
        ASSERT_TRUE(session.ok());
        GenerateParams gp;
        gp.n_predict = 16;
        gp.ignore_eos = true;
        auto single = generate(*session.value(), test_util::case_prompt(name), gp, {});
        ASSERT_TRUE(single.ok());
        EXPECT_EQ(r.tokens, single.value().tokens);
        EXPECT_EQ(r.text, single.value().text);
        EXPECT_EQ(results.streamed[ids[i]], r.text);
        const auto golden = test::read_golden(test::test_data_dir() / name / "golden.safetensors");
        test::expect_tokens_follow(r.tokens, golden.at("generated_ids").as_ints(),
                                   test::reference_steps(golden),
                                   test::logits_tolerance(precision));
        EXPECT_GT(r.timings.total, 0);
        EXPECT_GE(r.timings.total, r.timings.ttft);
        EXPECT_EQ(r.prompt_tokens, int(test_util::case_prompt(name).ids.size()));
    }
}

// Instantiated below with the prefix-reuse tests, over the same tiers and precisions.

TEST(Engine, CancelFreesTheSlot) {
    auto engine = make_engine(1, Precision::kF32);
    ASSERT_NE(engine, nullptr);
    Results results;
    RequestId first = 0, second = 0;
    Request r = make_request(results, &first, test_util::case_prompt("golden/text_only"), 200);
    Engine* e = engine.get();
    auto inner_text = r.on_text;
    r.on_text = [&, e, inner_text](std::string_view piece, std::int32_t token) {
        inner_text(piece, token);
        e->cancel(first);  // allowed from a callback
    };
    {
        const std::lock_guard<std::mutex> lock(results.mu);
        first = engine->submit(std::move(r)).value();
        second = engine
                     ->submit(make_request(results, &second,
                                           test_util::case_prompt("golden/text_only"), 4))
                     .value();
    }
    results.wait(2);
    const RequestResult& a = results.done.at(first);
    EXPECT_EQ(a.finish_reason, "cancelled");
    EXPECT_LT(a.tokens.size(), 5u);
    EXPECT_EQ(results.done.at(second).finish_reason, "length");
    EXPECT_EQ(results.done.at(second).tokens.size(), 4u);
    EXPECT_EQ(engine->stats().slots_busy, 0);
    EXPECT_EQ(engine->stats().queue_length, 0);
    engine->cancel(first);  // idempotent, long after the end
}

TEST(Engine, RefusesWhatCannotRun) {
    auto engine = make_engine(1, Precision::kF32, 32);
    ASSERT_NE(engine, nullptr);
    Request r;
    r.prompt.ids.assign(32, 198);
    auto id = engine->submit(std::move(r));
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), base::ErrorCode::kOutOfRange);
    Request empty;
    EXPECT_EQ(engine->submit(std::move(empty)).status().code(), base::ErrorCode::kInvalidArgument);

    EngineOptions eo;
    eo.threads = 1;
    eo.slots = 32;
    eo.ctx_size = 1 << 30;
    auto huge = Engine::create(test_util::tiny_model(), eo);
    ASSERT_FALSE(huge.ok());
    EXPECT_EQ(huge.status().code(), base::ErrorCode::kResourceExhausted);
    EXPECT_NE(huge.status().message().find("ctx-size"), std::string::npos)
        << huge.status().message();
    eo.ctx_size = 64;
    eo.slots = 33;
    EXPECT_EQ(Engine::create(test_util::tiny_model(), eo).status().code(),
              base::ErrorCode::kInvalidArgument);
}

TEST(Engine, QueueLimit) {
    EngineOptions eo;
    eo.threads = 1;
    eo.slots = 1;
    eo.ctx_size = 256;
    eo.max_queue = 0;
    auto engine = Engine::create(test_util::tiny_model(), eo);
    ASSERT_TRUE(engine.ok());
    Request r;
    r.prompt = test_util::case_prompt("golden/text_only");
    EXPECT_EQ(engine.value()->submit(std::move(r)).status().code(),
              base::ErrorCode::kResourceExhausted);
}

TEST(Engine, StopStringEndsBeforeTheMatch) {
    auto engine = make_engine(2, Precision::kF32);
    ASSERT_NE(engine, nullptr);
    Results results;
    RequestId probe = 0, cut = 0;
    {
        const std::lock_guard<std::mutex> lock(results.mu);
        probe = engine
                    ->submit(make_request(results, &probe,
                                          test_util::case_prompt("golden/text_only"), 16))
                    .value();
    }
    results.wait(1);
    const std::string full = results.done.at(probe).text;
    ASSERT_GE(full.size(), 4u);
    const std::string stop = full.substr(full.size() / 2, 2);
    Request r = make_request(results, &cut, test_util::case_prompt("golden/text_only"), 16);
    r.stop_strings = {stop};
    {
        const std::lock_guard<std::mutex> lock(results.mu);
        cut = engine->submit(std::move(r)).value();
    }
    results.wait(2);
    const RequestResult& c = results.done.at(cut);
    EXPECT_EQ(c.finish_reason, "stop");
    EXPECT_EQ(c.text, full.substr(0, full.find(stop)));
    EXPECT_EQ(results.streamed[cut], c.text);
}

}  // namespace
}  // namespace qvl::runtime

namespace qvl::runtime {
namespace {

// The next turn of a conversation: the prompt, the answer and a follow-up question.
PreparedPrompt next_turn(const PreparedPrompt& first, const std::vector<std::int32_t>& answer) {
    PreparedPrompt p = first;
    p.ids.insert(p.ids.end(), answer.begin(), answer.end());
    for (std::int32_t id : {151645, 198, 151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198})
        p.ids.push_back(id);
    return p;
}

TEST(Engine, NextTurnReusesTheSlotsPrefix) {
    const PreparedPrompt first = test_util::case_prompt("golden/img64_describe");
    auto engine = make_engine(2, Precision::kF32);
    ASSERT_NE(engine, nullptr);
    Results results;
    RequestId a = 0, b = 0, other = 0;
    {
        const std::lock_guard<std::mutex> lock(results.mu);
        a = engine->submit(make_request(results, &a, first, 8)).value();
    }
    results.wait(1);
    const std::vector<std::int32_t> answer = results.done.at(a).tokens;
    ASSERT_EQ(answer.size(), 8u);
    const PreparedPrompt second = next_turn(first, answer);
    {
        const std::lock_guard<std::mutex> lock(results.mu);
        // A different conversation first: it must take the other slot.
        other = engine
                    ->submit(make_request(results, &other,
                                          test_util::case_prompt("golden/text_only"), 4))
                    .value();
        b = engine->submit(make_request(results, &b, second, 8)).value();
    }
    results.wait(3);
    const RequestResult& rb = results.done.at(b);
    // The KV holds the prompt and every answer token but the last (never decoded).
    EXPECT_EQ(rb.cached_prompt_tokens, int(first.ids.size() + answer.size()) - 1);
    EXPECT_LT(results.done.at(other).cached_prompt_tokens, 8);

    // The same turn cold, on a fresh engine: the same greedy answer.
    auto cold_engine = make_engine(1, Precision::kF32);
    Results cold;
    RequestId c = 0;
    {
        const std::lock_guard<std::mutex> lock(cold.mu);
        c = cold_engine->submit(make_request(cold, &c, second, 8)).value();
    }
    cold.wait(1);
    EXPECT_EQ(cold.done.at(c).cached_prompt_tokens, 0);
    EXPECT_EQ(rb.tokens, cold.done.at(c).tokens);

    // The same tokens with another picture of the same size: reuse stops before its pads.
    PreparedPrompt changed = second;
    ASSERT_FALSE(changed.images[0].resized.rgb.empty());
    changed.images[0].resized.rgb[0] ^= 1;
    RequestId d = 0;
    {
        const std::lock_guard<std::mutex> lock(results.mu);
        d = engine->submit(make_request(results, &d, changed, 2)).value();
    }
    results.wait(4);
    const auto pad = std::find(second.ids.begin(), second.ids.end(),
                               test_util::tiny_model().config().image_token_id);
    EXPECT_LE(results.done.at(d).cached_prompt_tokens, int(pad - second.ids.begin()));
}

// Prefix reuse at the session level: the suffix prefilled after a reused prefix, whose keys and
// values came from a prefill and from decode steps, gives exactly the cold prefill's logits in
// every precision and tier (a row's products and attention never depend on how many rows are
// computed with it), with the stored weights and with 4-bit text and int8 vision weights.
class PrefillReusing : public ::testing::TestWithParam<std::tuple<Precision, kernels::Isa, bool>> {
  protected:
    // A session on the tiny model (quantized if the parameter says so) in the parameter's
    // precision and tier.
    static base::Result<std::unique_ptr<Session>> make_session() {
        SessionOptions so;
        so.threads = 2;
        so.ctx_size = 256;
        so.precision = std::get<0>(GetParam());
        so.isa = std::get<1>(GetParam());
        return Session::create(
            std::get<2>(GetParam()) ? test_util::tiny_model_quantized() : test_util::tiny_model(),
            so);
    }
};

TEST_P(PrefillReusing, MatchesColdBitForBit) {
    const kernels::Isa isa = std::get<1>(GetParam());
    QVL_SKIP_UNLESS_CPU(isa);
    const PreparedPrompt first = test_util::case_prompt("golden/img64_describe");
    const std::vector<std::int32_t> answer = {9707, 11, 1879, 0, 13};
    const PreparedPrompt second = next_turn(first, answer);
    auto session = make_session();
    ASSERT_TRUE(session.ok());
    Session& s = *session.value();
    ASSERT_TRUE(s.encode_image(second.images[0]).ok());
    ASSERT_TRUE(s.prefill(second.ids).ok());
    const std::vector<float> cold(s.logits().begin(), s.logits().end());

    s.reset();
    ASSERT_TRUE(s.encode_image(first.images[0]).ok());
    ASSERT_TRUE(s.prefill(first.ids).ok());
    for (std::int32_t t : answer) ASSERT_TRUE(s.decode(t).ok());
    const int keep = int(first.ids.size() + answer.size());
    const model::ImageGrid grid{.t = first.images[0].grid_t,
                                .h = first.images[0].grid_h / 2,
                                .w = first.images[0].grid_w / 2};
    ASSERT_TRUE(s.begin_prefill_reusing(0, second.ids, keep, {&grid, 1}).ok());
    for (bool done = false; !done;) ASSERT_TRUE(s.prefill_next(&done).ok());
    EXPECT_EQ(s.context_used(), int(second.ids.size()));
    double max_diff = 0, max_ref = 0;
    for (std::size_t i = 0; i < cold.size(); ++i) {
        max_diff = std::max(max_diff, double(std::abs(cold[i] - s.logits()[i])));
        max_ref = std::max(max_ref, double(std::abs(cold[i])));
    }
    EXPECT_EQ(max_diff, 0.0) << "of " << max_ref;
    // A prefix that is not the slot's is refused.
    std::vector<std::int32_t> wrong = second.ids;
    wrong[1] ^= 1;
    EXPECT_FALSE(s.begin_prefill_reusing(0, wrong, keep, {&grid, 1}).ok());
}

// A prompt prefilled in pieces gives exactly the one-chunk prefill's logits. Every piece but the
// last wants no logits, so its last layer stops once it has stored its K/V, and the last piece's
// last layer computes only its final row (model/text_decoder.cpp).
using PrefillPieces = PrefillReusing;

TEST_P(PrefillPieces, MatchOneChunkBitForBit) {
    const kernels::Isa isa = std::get<1>(GetParam());
    QVL_SKIP_UNLESS_CPU(isa);
    const PreparedPrompt prompt = test_util::case_prompt("golden/img64_describe");
    auto session = make_session();
    ASSERT_TRUE(session.ok());
    Session& s = *session.value();
    // The pieces first, on a fresh cache: run after the whole prompt they could read K/V that
    // the one-chunk prefill left behind.
    ASSERT_TRUE(s.encode_image(prompt.images[0]).ok());
    ASSERT_TRUE(s.begin_prefill(0, prompt.ids).ok());
    int pieces = 0;
    for (bool done = false; !done; ++pieces) ASSERT_TRUE(s.prefill_next(&done, 7).ok());
    EXPECT_GE(pieces, 3);
    EXPECT_EQ(s.context_used(), int(prompt.ids.size()));
    const std::vector<float> pieced(s.logits().begin(), s.logits().end());

    s.reset();
    ASSERT_TRUE(s.encode_image(prompt.images[0]).ok());
    ASSERT_TRUE(s.prefill(prompt.ids).ok());
    const std::vector<float> whole(s.logits().begin(), s.logits().end());
    EXPECT_EQ(pieced, whole);
    // And both are the reference's, within the precision's bound (the stored weights' bound: the
    // quantized formats have their own gates, golden_q4_test and golden_vision_q8_test).
    if (std::get<2>(GetParam())) return;
    const auto golden =
        test::read_golden(test::test_data_dir() / "golden/img64_describe/golden.safetensors");
    test::expect_step_matches(pieced, test::reference_steps(golden)[0],
                              test::logits_tolerance(std::get<0>(GetParam())), "prefill");
}

const auto kPrecisionsAndTiers =
    ::testing::Combine(::testing::ValuesIn(test::precisions_under_test()),
                       ::testing::Values(kernels::Isa::kScalar, kernels::Isa::kAvx2,
                                         kernels::Isa::kAvx512, kernels::Isa::kAvx512Bf16));
// Prefix reuse and pieces, with the stored weights (false) in every precision and tier, and with
// q4 text and q8 vision weights (true) in bf16 on every tier's kernels.
const auto kReuseTiers =
    ::testing::Combine(::testing::ValuesIn(test::precisions_under_test()),
                       ::testing::Values(kernels::Isa::kScalar, kernels::Isa::kAvx2,
                                         kernels::Isa::kAvx512, kernels::Isa::kAvx512Bf16),
                       ::testing::Values(false));
const auto kQuantizedTiers = ::testing::Combine(
    ::testing::Values(Precision::kBF16),
    ::testing::Values(kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvx512Bf16),
    ::testing::Values(true));

template <class Tuple>
std::string precision_and_tier(const ::testing::TestParamInfo<Tuple>& info) {
    std::string name = std::string(precision_name(std::get<0>(info.param))) + "_" +
                       kernels::isa_name(std::get<1>(info.param));
    if constexpr (std::tuple_size_v < Tuple >> 2) {
        if (std::get<2>(info.param)) name += "_q4_vision_q8";
    }
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

INSTANTIATE_TEST_SUITE_P(PrecisionsAndTiers, PrefillReusing, kReuseTiers,
                         precision_and_tier<PrefillReusing::ParamType>);
INSTANTIATE_TEST_SUITE_P(PrecisionsAndTiers, PrefillPieces, kReuseTiers,
                         precision_and_tier<PrefillReusing::ParamType>);
INSTANTIATE_TEST_SUITE_P(Quantized, PrefillReusing, kQuantizedTiers,
                         precision_and_tier<PrefillReusing::ParamType>);
INSTANTIATE_TEST_SUITE_P(Quantized, PrefillPieces, kQuantizedTiers,
                         precision_and_tier<PrefillReusing::ParamType>);
INSTANTIATE_TEST_SUITE_P(PrecisionsAndTiers, EngineGolden, kPrecisionsAndTiers,
                         precision_and_tier<EngineGolden::ParamType>);

}  // namespace
}  // namespace qvl::runtime

namespace qvl::runtime {
namespace {

TEST(Engine, ImageCacheSkipsTheVisionTower) {
    PreparedPrompt second = test_util::case_prompt("golden/img64_describe");
    second.ids[0] = 8948;  // no prefix in common with the first request, the same picture
    auto engine = make_engine(1, Precision::kF32);
    ASSERT_NE(engine, nullptr);
    Results results;
    RequestId a = 0, b = 0;
    {
        const std::lock_guard<std::mutex> lock(results.mu);
        a = engine
                ->submit(
                    make_request(results, &a, test_util::case_prompt("golden/img64_describe"), 4))
                .value();
        b = engine->submit(make_request(results, &b, second, 8)).value();
    }
    results.wait(2);
    EXPECT_EQ(results.done.at(a).image_cache_hits, 0);
    EXPECT_EQ(results.done.at(b).image_cache_hits, 1);
    EXPECT_EQ(results.done.at(b).cached_prompt_tokens, 0);

    EngineOptions eo;
    eo.threads = 2;
    eo.ctx_size = 256;
    eo.precision = Precision::kF32;
    eo.image_cache_mb = 0;
    auto cold_engine = Engine::create(test_util::tiny_model(), eo);
    ASSERT_TRUE(cold_engine.ok());
    Results cold;
    RequestId c = 0;
    {
        const std::lock_guard<std::mutex> lock(cold.mu);
        c = cold_engine.value()->submit(make_request(cold, &c, second, 8)).value();
    }
    cold.wait(1);
    EXPECT_EQ(cold.done.at(c).image_cache_hits, 0);
    EXPECT_EQ(results.done.at(b).tokens, cold.done.at(c).tokens);
}

// Cached features restored into a session give exactly the logits of running the tower.
TEST(Session, RestoredImageFeaturesGiveIdenticalLogits) {
    const PreparedPrompt p = test_util::case_prompt("golden/img64_describe");
    SessionOptions so;
    so.threads = 2;
    so.ctx_size = 256;
    auto session = Session::create(test_util::tiny_model(), so);
    ASSERT_TRUE(session.ok());
    Session& s = *session.value();
    ASSERT_TRUE(s.encode_image(p.images[0]).ok());
    const std::vector<float> levels = s.image_feature_levels(0);
    ASSERT_FALSE(levels.empty());
    ASSERT_TRUE(s.prefill(p.ids).ok());
    const std::vector<float> cold(s.logits().begin(), s.logits().end());
    s.reset();
    const model::ImageGrid grid{
        .t = p.images[0].grid_t, .h = p.images[0].grid_h / 2, .w = p.images[0].grid_w / 2};
    ASSERT_TRUE(s.add_encoded_image(grid, levels).ok());
    ASSERT_TRUE(s.prefill(p.ids).ok());
    EXPECT_EQ(0, std::memcmp(cold.data(), s.logits().data(), cold.size() * sizeof(float)));
    EXPECT_FALSE(s.add_encoded_image(grid, {levels.data(), levels.size() - 1}).ok());
}

TEST(ImageFeatureCache, LeastRecentlyUsedOut) {
    ImageFeatureCache cache(3 * 100 * sizeof(float));
    const model::ImageGrid g{.t = 1, .h = 2, .w = 2};
    for (std::uint64_t k = 1; k <= 3; ++k)
        cache.insert({k, k}, g, std::vector<float>(100, float(k)));
    ASSERT_NE(cache.find({1, 1}, g), nullptr);  // 1 is now the most recent
    cache.insert({4, 4}, g, std::vector<float>(100, 4.f));
    EXPECT_EQ(cache.find({2, 2}, g), nullptr);  // the least recently used went out
    EXPECT_NE(cache.find({1, 1}, g), nullptr);
    EXPECT_NE(cache.find({3, 3}, g), nullptr);
    EXPECT_EQ(cache.find({4, 4}, {.t = 1, .h = 4, .w = 1}), nullptr);  // another grid
    EXPECT_LE(cache.bytes(), 3 * 100 * sizeof(float));
    cache.insert({5, 5}, g, std::vector<float>(1000, 5.f));  // larger than the bound: not kept
    EXPECT_EQ(cache.find({5, 5}, g), nullptr);
    EXPECT_EQ(cache.size(), 3u);
}

}  // namespace
}  // namespace qvl::runtime

namespace qvl::runtime {
namespace {

// A running sequence keeps decoding while a long prompt is admitted: the prompt's prefill runs
// in pieces with a decode step after each (a tiny admission budget: one smallest chunk per step).
TEST(Engine, RunningSequencesStreamDuringAnAdmission) {
    auto engine = make_engine(2, Precision::kF32, 2400, 1e-3);
    ASSERT_NE(engine, nullptr);
    Engine* e = engine.get();
    std::mutex mu;
    std::condition_variable cv;
    int a_tokens = 0, a_tokens_at_submit = -1, a_tokens_at_b_first = -1;
    bool done_a = false, done_b = false;
    Request b;
    b.prompt.ids.assign(2200, 198);  // five prefill chunks of at most 512
    b.params.n_predict = 2;
    b.params.ignore_eos = true;
    b.on_text = [&](std::string_view, std::int32_t) {
        const std::lock_guard<std::mutex> lock(mu);
        if (a_tokens_at_b_first < 0) a_tokens_at_b_first = a_tokens;
    };
    b.on_done = [&](const RequestResult&) {
        const std::lock_guard<std::mutex> lock(mu);
        done_b = true;
        cv.notify_all();
    };
    Request a;
    a.prompt = test_util::case_prompt("golden/text_only");
    a.params.n_predict = 60;
    a.params.ignore_eos = true;
    a.on_text = [&](std::string_view, std::int32_t) {
        const std::lock_guard<std::mutex> lock(mu);
        ++a_tokens;
        cv.notify_all();
    };
    a.on_done = [&](const RequestResult&) {
        const std::lock_guard<std::mutex> lock(mu);
        done_a = true;
        cv.notify_all();
    };
    ASSERT_TRUE(engine->submit(std::move(a)).ok());
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return a_tokens >= 3; }));
    a_tokens_at_submit = a_tokens;
    lock.unlock();
    // At most one more step of A can run before B is admitted at the next scheduler step.
    ASSERT_TRUE(e->submit(std::move(b)).ok());
    lock.lock();
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return done_a && done_b; }));
    ASSERT_GE(a_tokens_at_b_first, 0);
    // 2200 / 64 prefill pieces, each followed by a decode step of the running sequence (B's
    // first token may come out before A's in the step that ends its prefill). Whole 512-token
    // chunks would give five; a blocking admission at most two.
    EXPECT_GE(a_tokens_at_b_first - a_tokens_at_submit, 30);
    EXPECT_LT(a_tokens_at_b_first, 60) << "A finished before B's admission: the test saw nothing";
}

}  // namespace
}  // namespace qvl::runtime
