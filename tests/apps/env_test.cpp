// qvl-run's environment variables (QVL_ISA, QVL_PRECISION, QVL_PROFILE, QVL_TRACE,
// QVL_LOGITS_SCREEN): read by the CLI only, mapped onto session (or load) options, and an unknown
// value is a usage error (exit 2) whose one error line names the variable. In-process through
// read_env_options, and once through the binary so the exit code is the program's.
#include "qvl_run/env.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "common/exit_codes.h"
#include "support/scratch_dir.h"

namespace qvl::app {
namespace {

struct EnvRead {
    int code = -100;
    EnvOptions options;
    std::string err;
};

EnvRead read_with(const std::map<std::string, std::string>& vars) {
    EnvRead r;
    char* buf = nullptr;
    std::size_t size = 0;
    std::FILE* err = open_memstream(&buf, &size);
    r.code = read_env_options(&r.options, err, [&](const char* name) -> const char* {
        const auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    });
    std::fclose(err);
    r.err.assign(buf, size);
    std::free(buf);
    return r;
}

TEST(EnvOptions, UnsetMeansDefaults) {
    const EnvRead r = read_with({});
    EXPECT_EQ(r.code, -1);
    EXPECT_FALSE(r.options.precision.has_value());
    EXPECT_TRUE(r.options.isa.empty());
    EXPECT_FALSE(r.options.profile);
    EXPECT_TRUE(r.options.trace_dir.empty());
    EXPECT_TRUE(r.err.empty());
}

TEST(EnvOptions, KnownValuesBecomeSessionOptions) {
    const EnvRead r = read_with({{"QVL_PRECISION", "bf16-all"},
                                 {"QVL_ISA", "avx2"},
                                 {"QVL_PROFILE", "1"},
                                 {"QVL_TRACE", "/tmp/trace here"}});
    ASSERT_EQ(r.code, -1) << r.err;
    SessionOptions so;
    apply_env_options(r.options, &so);
    EXPECT_EQ(so.precision, Precision::kBF16All);
    EXPECT_EQ(so.isa, "avx2");
    EXPECT_TRUE(so.profile);
    EXPECT_EQ(so.trace_dir, "/tmp/trace here");

    for (const auto& [name, want] :
         {std::pair{"f32", Precision::kF32}, std::pair{"bf16", Precision::kBF16}}) {
        const EnvRead p = read_with({{"QVL_PRECISION", name}, {"QVL_PROFILE", "0"}});
        ASSERT_EQ(p.code, -1) << p.err;
        EXPECT_EQ(p.options.precision, want) << name;
        EXPECT_FALSE(p.options.profile);
    }
    // The logits screen is a load option: on unless QVL_LOGITS_SCREEN=0.
    EXPECT_TRUE(read_with({}).options.logits_screen);
    EXPECT_TRUE(read_with({{"QVL_LOGITS_SCREEN", "1"}}).options.logits_screen);
    EXPECT_FALSE(read_with({{"QVL_LOGITS_SCREEN", "0"}}).options.logits_screen);
}

TEST(EnvOptions, UnknownValueIsAUsageErrorNamingTheVariable) {
    const struct {
        const char* name;
        const char* value;
        const char* message;
    } cases[] = {
        {"QVL_PRECISION", "bogus",
         "qvl-run: error: QVL_PRECISION: unknown value 'bogus' (expected f32, f32-kv-bf16, bf16, "
         "bf16-all)\n"},
        {"QVL_PRECISION", "auto",
         "qvl-run: error: QVL_PRECISION: unknown value 'auto' (expected f32, f32-kv-bf16, bf16, "
         "bf16-all)\n"},
        {"QVL_ISA", "foo",
         "qvl-run: error: QVL_ISA: unknown value 'foo' (expected scalar, avx2, avx512, "
         "avx512bf16)\n"},
        {"QVL_PROFILE", "maybe",
         "qvl-run: error: QVL_PROFILE: unknown value 'maybe' (expected 0, 1)\n"},
        {"QVL_LOGITS_SCREEN", "off",
         "qvl-run: error: QVL_LOGITS_SCREEN: unknown value 'off' (expected 0, 1)\n"},
    };
    for (const auto& c : cases) {
        const EnvRead r = read_with({{c.name, c.value}});
        EXPECT_EQ(r.code, kExitUsage) << c.name << "=" << c.value;
        EXPECT_EQ(r.err, c.message);
    }
}

#ifdef QVL_RUN_PATH
// The binary: a bad value stops qvl-run before the model is even looked at (the folder here
// does not exist, which would otherwise be exit 3).
TEST(EnvOptions, QvlRunExitsTwoOnABadValue) {
    const qvl::testing::ScratchDir dir;
    const std::filesystem::path err = dir.path() / "stderr.txt";
    for (const char* assignment : {"QVL_PRECISION=bogus", "QVL_ISA=foo", "QVL_PROFILE=maybe"}) {
        const std::string cmd = std::string("env ") + assignment + " '" + QVL_RUN_PATH +
                                "' -m /nonexistent/model -p hi 2>'" + err.string() + "'";
        const int status = std::system(cmd.c_str());
        ASSERT_TRUE(WIFEXITED(status)) << cmd;
        EXPECT_EQ(WEXITSTATUS(status), kExitUsage) << cmd;
        std::ifstream in(err);
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        const std::string variable(assignment, std::string(assignment).find('='));
        EXPECT_EQ(text.rfind("qvl-run: error: " + variable + ": unknown value '", 0), 0u) << text;
    }
}
#endif

}  // namespace
}  // namespace qvl::app
