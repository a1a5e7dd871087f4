// qvl-run on prompts and conversations that cannot run: missing or invalid prompt and messages
// files, context and memory budgets (exit 5), SIGINT, usage errors (tools in
// bad_input_support.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>

#include "bad_input_support.h"

namespace qvl::bad_input {
namespace {

// ---- prompts, context and generation budget ---------------------------------------------------

TEST_F(BadInput, PromptFileMissing) {
    const fs::path missing = scratch_.path() / "no-such-prompt.txt";
    expect_refused(run_qvl(args(kTiny, {"-f", missing.string()})), kInput, "no-such-prompt.txt");
}

TEST_F(BadInput, PromptInvalidUtf8IsRefused) {
    const fs::path p = scratch_.write("bad.txt", "hello \xff\xfe world \xc3");
    const RunResult r = run_qvl(args(kTiny, {"-f", p.string()}));
    expect_refused(r, kInput, "bad.txt");
    // The offset is into the file (6: the 0xff), not into the rendered chat prompt.
    expect_refused(r, kInput, "bad byte 0xff at byte offset 6");
}

TEST_F(BadInput, PromptLongerThanContext) {
    std::string prompt;
    for (int i = 0; i < 200; ++i) prompt += "word" + std::to_string(i) + " ";
    expect_refused(run_qvl(args(kTiny, {"-c", "64", "-p", prompt})), kResource, "context");
}

TEST_F(BadInput, HugePredictCount) {
    expect_refused(run_qvl(args(kTiny, {"-c", "64", "-n", "1000000"})), kResource, "context");
}

TEST_F(BadInput, ImageTokensBeyondContext) {
    // 64x64 is 4 tokens after merging, the chat template ~15: a 16-token context cannot hold it.
    expect_refused(run_qvl(args(kTiny, {"-c", "16", "-i", kPng.string()})), kResource, "context");
}

// The session's arenas for a million-token context do not fit a 1 GiB address space: refused
// with exit 5 before anything is touched, instead of a crash or the OOM killer. Not built under
// ASan (RLIMIT_AS cannot be combined with its shadow memory): the Release run has it.
#if !defined(QVL_UNDER_ASAN)
TEST_F(BadInput, ContextBeyondMemory) {
    const RunResult r = run_qvl(args(kTiny, {"-c", "1048576"}), 1024);
    // The session's own budget refuses, with its one message and consistent numbers; an
    // allocation failing further on ("could not allocate") would mean the budget let through a
    // session that cannot be had.
    expect_refused(r, kResource, "memory budget: the session needs");
    const std::regex message(
        "memory budget: the session needs ([0-9]+) MiB \\(KV cache ([0-9]+) MiB \\+ activations "
        "([0-9]+) MiB\\) but only ([0-9]+) MiB of memory are available; lower --ctx-size or "
        "--image-max-tokens");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, message)) << r.err;
    const long need = std::stol(m[1]), kv = std::stol(m[2]), act = std::stol(m[3]);
    const long available = std::stol(m[4]);
    EXPECT_LE(std::labs(need - kv - act), 1) << r.err;  // each rounded to whole MiB
    EXPECT_LT(available, 1024) << r.err;                // under the 1 GiB address space
    EXPECT_GT(need, available) << r.err;
    // At least a bf16 cache: 2^20 positions x 4 layers x (K, V) x 2 heads x 16 x 2 bytes.
    EXPECT_GE(kv, 512) << r.err;
    EXPECT_EQ(lines_starting_with(r.err, "hint: ").size(), 1u) << r.err;
}
#endif

// SIGINT during generation: the text so far is on stdout and the exit code is 130.
TEST_F(BadInput, InterruptFlushesAndExits130) {
    const RunResult r =
        run_qvl(args(kTiny, {"-c", "100000", "-n", "99000", "--ignore-eos"}), 0, 16);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.signal, 0) << r.err;
    EXPECT_EQ(r.exit_code, 130) << r.err;
    EXPECT_GE(r.out.size(), 16u);
    EXPECT_TRUE(lines_starting_with(r.err, "qvl-run: error: ").empty()) << r.err;
}

TEST_F(BadInput, MessagesFileMissing) {
    const fs::path missing = scratch_.path() / "no-such-messages.json";
    expect_refused(run_qvl(args(kTiny, {"--messages", missing.string()})), kInput,
                   "no-such-messages.json");
}

TEST_F(BadInput, MessagesNotJson) {
    const fs::path p = scratch_.write("msgs.json", "[{\"role\": \"user\", \"content\": ");
    expect_refused(run_qvl(args(kTiny, {"--messages", p.string()})), kInput, "msgs.json");
}

TEST_F(BadInput, MessagesImageMissing) {
    const fs::path p = scratch_.write(
        "msgs.json", R"([{"role": "user", "content": [{"type": "image", "image": "gone.png"}, )"
                     R"({"type": "text", "text": "what?"}]}])");
    expect_refused(run_qvl(args(kTiny, {"--messages", p.string()})), kInput, "gone.png");
}

// ---- the command line ------------------------------------------------------------------------

TEST_F(BadInput, UsageErrors) {
    expect_refused(run_qvl({"-p", "hi"}), kUsage, "-m");
    expect_refused(run_qvl({"-m", kTiny.string(), "-p", "hi", "--no-such-flag"}), kUsage,
                   "--no-such-flag");
    expect_refused(run_qvl({"-m", kTiny.string(), "-p", "hi", "-n", "-5"}), kUsage, "-n");
    expect_refused(run_qvl({"-m", kTiny.string(), "-p", "hi", "-c", "0"}), kUsage, "ctx-size");
}

TEST_F(BadInput, SanityTheTinyModelRuns) { expect_success(run_qvl(args(kTiny, {}))); }

}  // namespace
}  // namespace qvl::bad_input
