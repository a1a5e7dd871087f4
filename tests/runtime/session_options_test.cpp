// Session options that used to be environment variables: the kernel tier, tracing and
// profiling are fields of SessionOptions, and the engine reads no QVL_* variable itself.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "kernels/isa.h"
#include "model/model.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "support/cpu_skip.h"
#include "support/golden.h"
#include "support/scratch_dir.h"
#include "support/tiny_model.h"

namespace qvl::runtime {
namespace {

using test::tiny_model;

TEST(SessionOptions, PrecisionNames) {
    EXPECT_EQ(precision_from_name("auto"), Precision::kAuto);
    for (Precision p : kNamedPrecisions) EXPECT_EQ(precision_from_name(precision_name(p)), p);
    EXPECT_EQ(precision_choices(), "f32, f32-kv-bf16, bf16, bf16-all");
    EXPECT_FALSE(precision_from_name("bogus").has_value());
    EXPECT_FALSE(precision_from_name("").has_value());
}

TEST(SessionOptions, IsaRequestIsClampedToTheCpu) {
    EXPECT_EQ(kernels::resolve_isa(kernels::Isa::kScalar), kernels::Isa::kScalar);
    EXPECT_EQ(kernels::resolve_isa(kernels::Isa::kAvx512Bf16), kernels::best_isa());
    EXPECT_STREQ(kernel_isa_name(kernels::Isa::kScalar), "scalar");
    EXPECT_STREQ(kernel_isa_name(), kernels::isa_name(kernels::best_isa()));
}

TEST(SessionOptions, AutoPrecisionFollowsTheFastBf16Path) {
    QVL_SKIP_UNLESS_CPU(kernels::Isa::kAvx512Bf16);  // without it, auto is f32-kv-bf16
    const bool saved = kernels::bf16_dot_for_gemm();
    SessionOptions so;
    so.threads = 1;
    so.ctx_size = 64;
    kernels::set_bf16_dot_for_gemm(true);  // AMD Zen 4/5: bf16 attention too
    auto fast = Session::create(tiny_model(), so);
    kernels::set_bf16_dot_for_gemm(false);  // the Intel Xeons seen here: bf16 products only
    auto slow = Session::create(tiny_model(), so);
    kernels::set_bf16_dot_for_gemm(saved);
    ASSERT_TRUE(fast.ok() && slow.ok());
    EXPECT_EQ(fast.value()->precision(), Precision::kBF16All);
    EXPECT_EQ(slow.value()->precision(), Precision::kBF16);
    so.precision = Precision::kBF16;  // an explicit choice is kept
    kernels::set_bf16_dot_for_gemm(true);
    auto asked = Session::create(tiny_model(), so);
    kernels::set_bf16_dot_for_gemm(saved);
    ASSERT_TRUE(asked.ok());
    EXPECT_EQ(asked.value()->precision(), Precision::kBF16);
}

TEST(SessionOptions, IsaAndTraceAreOptionsNotEnvironment) {
    // The environment says otherwise; the options win because the engine never looks at it.
    const qvl::testing::ScratchDir env_dir;
    setenv("QVL_ISA", "avx2", 1);
    setenv("QVL_TRACE", (env_dir.path() / "from_env").c_str(), 1);
    const qvl::testing::ScratchDir dir;
    SessionOptions so;
    so.threads = 1;
    so.ctx_size = 64;
    so.isa = kernels::Isa::kScalar;
    so.trace_dir = (dir.path() / "trace").string();
    auto session = Session::create(tiny_model(), so);
    unsetenv("QVL_ISA");
    unsetenv("QVL_TRACE");
    ASSERT_TRUE(session.ok()) << session.status().message();
    Session& s = *session.value();
    EXPECT_EQ(s.isa(), kernels::Isa::kScalar);
    auto prompt = prepare_raw_prompt(tiny_model(), "hello");
    ASSERT_TRUE(prompt.ok());
    ASSERT_TRUE(s.prefill(prompt->ids).ok());
    ASSERT_TRUE(std::filesystem::is_directory(dir.path() / "trace"));
    EXPECT_FALSE(std::filesystem::is_empty(dir.path() / "trace"));
    EXPECT_FALSE(std::filesystem::exists(env_dir.path() / "from_env"));
}

}  // namespace
}  // namespace qvl::runtime
