// qvl-run on prompts and conversations that cannot run: missing or invalid prompt and messages
// files, context and memory budgets (exit 5), SIGINT, usage errors (tools in
// bad_input_support.h).
#include <gtest/gtest.h>

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
    // Either the memory budget refuses ("memory budget: ... MiB") or the allocation fails
    // ("could not allocate"); both name the amount.
    expect_refused(r, kResource, "");
    EXPECT_TRUE(r.err.find("memory budget") != std::string::npos ||
                r.err.find("could not allocate") != std::string::npos)
        << r.err;
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
