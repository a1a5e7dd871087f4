// The qvl-synth binary: exit codes and the one-line error format (the writer itself is tested
// in-process by synth_test.cpp).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

#ifdef QVL_SYNTH_PATH

struct RunResult {
    int exit_code = -1;
    std::string err;
};

// Runs qvl-synth with `args` (already shell-quoted), capturing stderr.
RunResult run_synth(const std::string& args) {
    const fs::path err_file =
        fs::temp_directory_path() / ("qvl_synth_cli_err_" + std::to_string(::getpid()));
    const std::string cmd =
        std::string(QVL_SYNTH_PATH) + " " + args + " 2>'" + err_file.string() + "'";
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err_file);
    r.err.assign(std::istreambuf_iterator<char>(in), {});
    fs::remove(err_file);
    return r;
}

const std::string kTokenizerDir = std::string(QVL_TEST_DATA_DIR) + "/tiny-qwen3vl";

TEST(SynthCliTest, UsageErrorsExitTwoWithOneErrorLine) {
    for (const std::string& args :
         {std::string(""), std::string("--out /tmp/never"), std::string("--bogus"),
          "--out /tmp/never --tokenizer-dir " + kTokenizerDir + " --seed -1",
          "--out /tmp/never --tokenizer-dir " + kTokenizerDir + " extra"}) {
        SCOPED_TRACE(args);
        const RunResult r = run_synth(args);
        EXPECT_EQ(r.exit_code, 2);
        EXPECT_EQ(r.err.rfind("qvl-synth: error: ", 0), 0u) << r.err;
        EXPECT_FALSE(fs::exists("/tmp/never"));
    }
}

TEST(SynthCliTest, TinyCheckpointAndMissingTokenizer) {
    const fs::path out =
        fs::temp_directory_path() / ("qvl_synth_cli_out_" + std::to_string(::getpid()));
    RunResult r =
        run_synth("--out '" + out.string() + "' --tokenizer-dir " + kTokenizerDir + " --tiny-dims");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::is_regular_file(out / "model.safetensors"));
    EXPECT_TRUE(fs::is_regular_file(out / "tokenizer.json"));

    r = run_synth("--out '" + out.string() + "' --tokenizer-dir '" + out.string() + "/nothing'");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err.rfind("qvl-synth: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("nothing/tokenizer.json"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    fs::remove_all(out);
}

#else

TEST(SynthCliTest, NeedsTheBinary) { GTEST_SKIP() << "qvl-synth not built (QVL_BUILD_APPS=OFF)"; }

#endif

}  // namespace
