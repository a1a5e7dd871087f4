#include "runtime/memory_budget.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>

// ASan reserves terabytes of address space, so RLIMIT_AS cannot be tested under it.
#if defined(__SANITIZE_ADDRESS__)
#define QVL_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QVL_UNDER_ASAN 1
#endif
#endif

namespace qvl::runtime {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

TEST(MemoryBudget, FitsIsOk) {
    // Weights + session exceed the budget, but the weights are file-backed and fit on their own.
    EXPECT_TRUE(check_memory_budget(900 * kMiB, 100 * kMiB, 200 * kMiB, 1000 * kMiB).ok());
    EXPECT_TRUE(check_memory_budget(900 * kMiB, 50 * kMiB, 50 * kMiB, 1000 * kMiB).ok());
    EXPECT_TRUE(check_memory_budget(0, 500 * kMiB, 500 * kMiB, 1000 * kMiB).ok());
}

TEST(MemoryBudget, SessionTooLargeIsRefusedWithNumbersAndHint) {
    const base::Status st = check_memory_budget(100 * kMiB, 3000 * kMiB, 1096 * kMiB, 4000 * kMiB);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), base::ErrorCode::kResourceExhausted);
    EXPECT_NE(st.message().find("4096 MiB"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("3000 MiB"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("1096 MiB"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("4000 MiB"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("--ctx-size"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("--image-max-tokens"), std::string::npos) << st.message();
}

TEST(MemoryBudget, WeightsAloneTooLargeIsRefused) {
    const base::Status st = check_memory_budget(5000 * kMiB, 1 * kMiB, 1 * kMiB, 4000 * kMiB);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), base::ErrorCode::kResourceExhausted);
    EXPECT_NE(st.message().find("weights need 5000 MiB"), std::string::npos) << st.message();
}

TEST(MemoryBudget, UnknownAvailableIsOk) {
    EXPECT_TRUE(check_memory_budget(UINT64_MAX, UINT64_MAX, UINT64_MAX, 0).ok());
}

TEST(MemoryBudget, HostileSizesDoNotOverflow) {
    const base::Status st = check_memory_budget(0, UINT64_MAX, UINT64_MAX, 1000 * kMiB);
    EXPECT_EQ(st.code(), base::ErrorCode::kResourceExhausted);
    EXPECT_FALSE(check_memory_budget(0, UINT64_MAX - 5, 10, UINT64_MAX - 1).ok());
}

TEST(MemoryBudget, ExactFitIsOk) {
    EXPECT_TRUE(check_memory_budget(10, 40, 60, 100).ok());
    EXPECT_FALSE(check_memory_budget(10, 40, 61, 100).ok());
    EXPECT_TRUE(check_memory_budget(100, 0, 0, 100).ok());
    EXPECT_FALSE(check_memory_budget(101, 0, 0, 100).ok());
}

TEST(MemoryBudget, ParsesMeminfo) {
    const std::string text =
        "MemTotal:       24000000 kB\n"
        "MemFree:        19000000 kB\n"
        "MemAvailable:   23194760 kB\n"
        "Buffers:           12345 kB\n";
    EXPECT_EQ(parse_meminfo_available(text), std::uint64_t(23194760) * 1024);
    EXPECT_EQ(parse_meminfo_available("MemTotal: 5 kB\n"), 0u);
    EXPECT_EQ(parse_meminfo_available("MemAvailable: junk kB\n"), 0u);
    EXPECT_EQ(parse_meminfo_available("MemAvailable: 99999999999999999999999 kB\n"), 0u);
    EXPECT_EQ(parse_meminfo_available(""), 0u);
}

TEST(MemoryBudget, ParsesCgroupLimits) {
    EXPECT_EQ(parse_cgroup_bytes("8589934592\n"), 8589934592u);
    EXPECT_EQ(parse_cgroup_bytes("max\n"), 0u);
    EXPECT_EQ(parse_cgroup_bytes(""), 0u);
}

TEST(MemoryBudget, AvailableMemoryIsPlausible) {
    // Every Linux since 3.14 has MemAvailable; the test machine has at least 64 MiB free and
    // certainly less than 64 TiB.
    const std::uint64_t avail = available_memory_bytes();
    EXPECT_GT(avail, 64 * kMiB);
    EXPECT_LT(avail, std::uint64_t(64) << 40);
}

// An address-space limit lowers the estimate (checked in a child so the limit does not stick).
// Not built under ASan, which reserves terabytes of address space (RLIMIT_AS cannot be set under
// it): the Release run has it, and a skip would not be a missing CPU feature.
#if !defined(QVL_UNDER_ASAN)
TEST(MemoryBudget, AddressSpaceLimitLowersAvailable) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        rlimit lim{};
        getrlimit(RLIMIT_AS, &lim);
        lim.rlim_cur = rlim_t(8192) * kMiB;
        if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(2);
        const std::uint64_t avail = available_memory_bytes();
        _exit(avail > 0 && avail < std::uint64_t(8192) * kMiB ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}
#endif

}  // namespace
}  // namespace qvl::runtime
