// qvl-run's default thread count follows the CPUs the process may use (issue 47): under
// `taskset -c 0` the --json report says 1 thread and why, whatever the machine has.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "base/cpu_budget.h"

namespace qvl::app {
namespace {

#ifdef QVL_RUN_PATH
std::string run_json(const std::string& prefix, const std::string& extra) {
    const std::string tiny = std::string(QVL_TEST_DATA_DIR) + "/tiny-qwen3vl";
    const std::string cmd = prefix + " '" + QVL_RUN_PATH + "' -m '" + tiny +
                            "' -p hi -n 1 --temp 0 --json " + extra + " 2>/dev/null";
    std::FILE* p = popen(cmd.c_str(), "r");
    EXPECT_NE(p, nullptr) << cmd;
    if (p == nullptr) return {};
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    const int status = pclose(p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
    return out;
}

TEST(ThreadsDefault, TasksetOneCpuMeansOneThread) {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/taskset")) << "util-linux's taskset is missing";
    const std::string out = run_json("taskset -c 0", "");
    EXPECT_NE(out.find("\"threads\": 1,"), std::string::npos) << out;
    EXPECT_NE(out.find("among 1 allowed CPU"), std::string::npos) << out;
}

TEST(ThreadsDefault, UnpinnedUsesTheBudgetAndFlagOverrides) {
    const std::string all = run_json("", "");
    const int expected = base::default_threads();
    EXPECT_NE(all.find("\"threads\": " + std::to_string(expected) + ","), std::string::npos)
        << all;
    const std::string forced = run_json("taskset -c 0", "-t 3");
    EXPECT_NE(forced.find("\"threads\": 3,"), std::string::npos) << forced;
    EXPECT_NE(forced.find("\"threads_reason\": \"--threads\""), std::string::npos) << forced;
}
#endif

}  // namespace
}  // namespace qvl::app
