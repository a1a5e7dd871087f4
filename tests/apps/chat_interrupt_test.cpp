// Ctrl-C in chat mode stops the current answer (the engine cancels the request), not the chat:
// the text so far stays on stdout, and the next line of stdin is still read.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "bad_input_support.h"
#include "support/scratch_dir.h"

namespace qvl::bad_input {
namespace {

// Runs qvl-run with stdin read from `stdin_path` (the child inherits this process's stdin).
RunResult run_with_stdin(const std::vector<std::string>& args, const fs::path& stdin_path,
                         std::size_t interrupt_after_output) {
    const int saved = dup(STDIN_FILENO);
    const int in = open(stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (saved < 0 || in < 0) {
        ADD_FAILURE() << "cannot redirect stdin";
        return {};
    }
    dup2(in, STDIN_FILENO);
    close(in);
    RunResult r = run_qvl(args, 0, interrupt_after_output);
    dup2(saved, STDIN_FILENO);
    close(saved);
    return r;
}

TEST(ChatInterrupt, CtrlCStopsTheAnswerNotTheChat) {
    testing::ScratchDir dir;
    const fs::path turns = dir.path() / "turns.txt";
    // The first answer would run for minutes; the second line must still be read after Ctrl-C.
    std::ofstream(turns, std::ios::binary) << "Hello\n/bogus\n";
    const RunResult r = run_with_stdin({"-m", kTiny.string(), "-c", "100000", "-n", "99000",
                                        "--ignore-eos", "--temp", "0", "--interactive"},
                                       turns, 16);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.signal, 0) << r.err;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_GE(r.out.size(), 16u);
    EXPECT_EQ(r.out.substr(r.out.size() - 2), "\n\n");
    EXPECT_NE(r.err.find("answer stopped"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("unknown command /bogus"), std::string::npos) << r.err;  // read on
}

}  // namespace
}  // namespace qvl::bad_input
