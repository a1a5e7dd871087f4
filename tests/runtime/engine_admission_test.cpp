// Admission in bounded pieces: while a running sequence decodes, another request's image goes
// through the vision tower a few nodes per scheduler step, so the running sequence keeps
// receiving tokens; both requests' greedy tokens are exactly those of running alone; a request
// cancelled in the middle of its vision tower frees its slot and the next request works. The
// order of events is forced through the engine's own callbacks (a request parked in its on_text
// holds the scheduler), never by sleeps or by racing the decoding request.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

// One request's progress, written on the scheduler thread, read by the test under mu.
struct Progress {
    int tokens = 0;
    bool done = false;
    RequestResult result;
};

struct Board {
    std::mutex mu;
    std::condition_variable cv;

    template <class Pred>
    bool wait(Pred pred) {
        std::unique_lock<std::mutex> lock(mu);
        return cv.wait_for(lock, std::chrono::seconds(120), pred);
    }
};

Request tracked(Board& board, Progress* p, PreparedPrompt prompt, int n_predict) {
    Request r;
    r.prompt = std::move(prompt);
    r.params.n_predict = n_predict;
    r.params.ignore_eos = true;
    r.on_text = [&board, p](std::string_view, std::int32_t) {
        const std::lock_guard<std::mutex> lock(board.mu);
        ++p->tokens;
        board.cv.notify_all();
    };
    r.on_done = [&board, p](const RequestResult& res) {
        const std::lock_guard<std::mutex> lock(board.mu);
        p->result = res;
        p->done = true;
        board.cv.notify_all();
    };
    return r;
}

// A request whose on_text holds the scheduler thread at its park_at-th token until the test
// calls release(): what the test submits meanwhile is queued before the scheduler's next step,
// whatever the machine's load (no sleeps, no race with the decoding request).
struct Parking {
    Board& board;
    bool parked = false, released = false;

    Request request(Progress* p, PreparedPrompt prompt, int n_predict, int park_at) {
        Request r = tracked(board, p, std::move(prompt), n_predict);
        auto inner = r.on_text;
        r.on_text = [this, p, park_at, inner](std::string_view piece, std::int32_t token) {
            inner(piece, token);
            std::unique_lock<std::mutex> lock(board.mu);
            if (p->tokens != park_at) return;
            parked = true;
            board.cv.notify_all();
            board.cv.wait(lock, [this] { return released; });
        };
        return r;
    }
    bool wait_parked() {
        return board.wait([this] { return parked; });
    }
    void release() {
        {
            const std::lock_guard<std::mutex> lock(board.mu);
            released = true;
        }
        board.cv.notify_all();
    }
};

std::unique_ptr<Engine> make_engine(int slots, double budget_ms) {
    EngineOptions eo;
    eo.threads = 2;
    eo.slots = slots;
    eo.ctx_size = 256;
    eo.precision = Precision::kF32;
    eo.image_cache_mb = 0;  // every image runs through the tower
    eo.admission_budget_ms = budget_ms;
    auto e = Engine::create(test_util::tiny_model(), eo);
    EXPECT_TRUE(e.ok()) << e.status().message();
    return e.ok() ? std::move(e).value() : nullptr;
}

// The tokens of one request served alone.
std::vector<std::int32_t> alone(const PreparedPrompt& prompt, int n_predict) {
    auto engine = make_engine(1, 0);
    Board board;
    Progress p;
    EXPECT_TRUE(engine->submit(tracked(board, &p, prompt, n_predict)).ok());
    EXPECT_TRUE(board.wait([&] { return p.done; }));
    return p.result.tokens;
}

TEST(EngineAdmission, RunningSequenceStreamsWhileAnImageIsEncoded) {
    const PreparedPrompt text = test_util::case_prompt("golden/text_only");
    const PreparedPrompt image = test_util::case_prompt("golden/img96x64_shapes");
    ASSERT_FALSE(image.images.empty());
    auto engine = make_engine(2, 1e-3);  // one vision node or one 64-token chunk per step
    ASSERT_NE(engine, nullptr);
    Board board;
    Progress a, b;
    int a_at_submit = 0, a_at_b_first = -1, vision_nodes = 0;
    Request rb = tracked(board, &b, image, 6);
    rb.on_vision_node = [&](const std::string&, const float*, int, int, std::ptrdiff_t) {
        ++vision_nodes;  // scheduler thread only
    };
    auto b_text = rb.on_text;
    rb.on_text = [&, b_text](std::string_view piece, std::int32_t token) {
        {
            const std::lock_guard<std::mutex> lock(board.mu);
            if (a_at_b_first < 0) a_at_b_first = a.tokens;
        }
        b_text(piece, token);
    };
    // A is held at its third token while B is submitted: B's admission starts at A's next step.
    Parking parking{board};
    ASSERT_TRUE(engine->submit(parking.request(&a, text, 120, 3)).ok());
    ASSERT_TRUE(parking.wait_parked());
    a_at_submit = 3;
    ASSERT_TRUE(engine->submit(std::move(rb)).ok());
    parking.release();
    ASSERT_TRUE(board.wait([&] { return a.done && b.done; }));
    ASSERT_GE(a_at_b_first, 0);
    ASSERT_LT(a_at_b_first, 120) << "A finished before B's admission: the test saw nothing";
    // About one token of A per vision node. An admission that runs the whole tower in one
    // piece lets at most about three through (one step per image, per chunk, and the last).
    EXPECT_GT(vision_nodes, 20);
    EXPECT_GE(a_at_b_first - a_at_submit, vision_nodes / 2)
        << "A received too few tokens while B's image was encoded";
    EXPECT_GT(b.result.timings.vision, 0);
    // Neither answer depends on the interleaving.
    EXPECT_EQ(a.result.tokens, alone(text, 120));
    EXPECT_EQ(b.result.tokens, alone(image, 6));
    EXPECT_EQ(engine->stats().slots_busy, 0);
}

TEST(EngineAdmission, CancelDuringTheVisionTowerFreesTheSlot) {
    const PreparedPrompt text = test_util::case_prompt("golden/text_only");
    const PreparedPrompt image = test_util::case_prompt("golden/img96x64_shapes");
    auto engine = make_engine(2, 1e-3);
    ASSERT_NE(engine, nullptr);
    Engine* e = engine.get();
    Board board;
    Progress a, b, c;
    std::atomic<RequestId> b_id{0};
    std::atomic<int> b_nodes{0};
    int b_nodes_at_cancel = -1;
    Request rb = tracked(board, &b, image, 6);
    rb.on_vision_node = [&](const std::string&, const float*, int, int, std::ptrdiff_t) {
        // Mid-tower: cancel B from the scheduler thread (allowed from a callback).
        if (++b_nodes == 3) {
            b_nodes_at_cancel = 3;
            e->cancel(b_id.load());
        }
    };
    // A is held at its second token while B is submitted (and b_id set): B is admitted in
    // bounded pieces beside a decoding A, never in one unbounded piece.
    Parking parking{board};
    ASSERT_TRUE(engine->submit(parking.request(&a, text, 100, 2)).ok());
    ASSERT_TRUE(parking.wait_parked());
    {
        auto id = engine->submit(std::move(rb));
        ASSERT_TRUE(id.ok());
        b_id = id.value();
    }
    parking.release();
    ASSERT_TRUE(board.wait([&] { return b.done; }));
    EXPECT_EQ(b.result.finish_reason, "cancelled") << b.result.error.message();
    EXPECT_TRUE(b.result.tokens.empty());
    EXPECT_EQ(b_nodes_at_cancel, 3);
    EXPECT_LE(b_nodes.load(), 4) << "the tower ran on after the cancel";
    // The freed slot serves the same picture correctly.
    ASSERT_TRUE(engine->submit(tracked(board, &c, image, 6)).ok());
    ASSERT_TRUE(board.wait([&] { return a.done && c.done; }));
    EXPECT_EQ(c.result.finish_reason, "length") << c.result.error.message();
    EXPECT_EQ(c.result.tokens, alone(image, 6));
    EXPECT_EQ(a.result.tokens, alone(text, 100));
    EXPECT_EQ(engine->stats().slots_busy, 0);
}

// Requests that arrive together while nobody decodes are admitted back to back and then decode
// together: with four slots, the first request's second token comes after the last request's
// first token.
TEST(EngineAdmission, RequestsArrivingTogetherStartDecodingTogether) {
    const std::vector<std::string> cases = {"golden/img64_describe", "golden/img96x64_shapes",
                                            "golden/img90x70_resize", "golden/text_only"};
    auto engine = make_engine(4, 1e-3);
    ASSERT_NE(engine, nullptr);
    Board board;
    std::vector<Progress> p(cases.size());
    std::vector<int> first_order(cases.size(), -1), second_order(cases.size(), -1);
    int events = 0;
    // The four must be queued before the scheduler looks at the queue: it is held inside the
    // on_done of an earlier request until they are.
    std::mutex gate;
    std::unique_lock<std::mutex> gate_lock(gate);
    Progress opener;
    bool held = false;
    Request first = tracked(board, &opener, test_util::case_prompt("golden/text_only"), 1);
    auto opener_done = first.on_done;
    first.on_done = [&, opener_done](const RequestResult& res) {
        {
            const std::lock_guard<std::mutex> lock(board.mu);
            held = true;
        }
        board.cv.notify_all();
        const std::lock_guard<std::mutex> wait_for_the_test(gate);
        opener_done(res);
    };
    ASSERT_TRUE(engine->submit(std::move(first)).ok());
    ASSERT_TRUE(board.wait([&] { return held; }));
    for (std::size_t i = 0; i < cases.size(); ++i) {
        Request r = tracked(board, &p[i], test_util::case_prompt(cases[i]), 4);
        auto inner = r.on_text;
        r.on_text = [&, i, inner](std::string_view piece, std::int32_t token) {
            inner(piece, token);
            const std::lock_guard<std::mutex> l(board.mu);
            if (p[i].tokens == 1) first_order[i] = events++;
            if (p[i].tokens == 2) second_order[i] = events++;
        };
        ASSERT_TRUE(engine->submit(std::move(r)).ok());
    }
    gate_lock.unlock();
    ASSERT_TRUE(board.wait([&] {
        for (const Progress& q : p) {
            if (!q.done) return false;
        }
        return true;
    }));
    const int last_first = *std::max_element(first_order.begin(), first_order.end());
    const int first_second = *std::min_element(second_order.begin(), second_order.end());
    EXPECT_LT(last_first, first_second) << "a sequence decoded before the others were admitted";
    for (std::size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(p[i].result.tokens, alone(test_util::case_prompt(cases[i]), 4)) << cases[i];
    }
}

// A request cancelled while it waits in the queue (a client gone before its turn) ends
// "cancelled" through its on_done, without a token, and the queue behind it goes on: the next
// request is served as alone. Only one slot, held by a request parked at its second token, so
// that B and C are queued when B's cancel is taken. No other test reached this path (probed:
// the engine and API tests, serve_api, serve_hardening and serve_reliability's soak never
// cancelled a queued request).
TEST(EngineAdmission, CancelWhileQueuedEndsItAndServesTheRest) {
    const PreparedPrompt text = test_util::case_prompt("golden/text_only");
    auto engine = make_engine(1, 0);
    ASSERT_NE(engine, nullptr);
    Board board;
    Progress a, b, c;
    Parking parking{board};
    ASSERT_TRUE(engine->submit(parking.request(&a, text, 8, 2)).ok());
    ASSERT_TRUE(parking.wait_parked());
    auto b_id = engine->submit(tracked(board, &b, text, 8));
    ASSERT_TRUE(b_id.ok());
    ASSERT_TRUE(engine->submit(tracked(board, &c, text, 8)).ok());
    EXPECT_EQ(engine->stats().queue_length, 2);
    engine->cancel(b_id.value());
    parking.release();
    ASSERT_TRUE(board.wait([&] { return a.done && b.done && c.done; }))
        << "a request cancelled in the queue never finished (or the queue behind it stalled)";
    EXPECT_EQ(b.result.finish_reason, "cancelled") << b.result.error.message();
    EXPECT_TRUE(b.result.tokens.empty());
    EXPECT_EQ(b.tokens, 0);
    EXPECT_EQ(c.result.finish_reason, "length") << c.result.error.message();
    const std::vector<std::int32_t> want = alone(text, 8);
    EXPECT_EQ(a.result.tokens, want);
    EXPECT_EQ(c.result.tokens, want);
    EXPECT_EQ(engine->stats().slots_busy, 0);
    EXPECT_EQ(engine->stats().queue_length, 0);
}

}  // namespace
}  // namespace qvl::runtime
