// The default thread count: physical cores among the allowed CPUs, within the cgroup CPU quota
// (issue 47), on fixture files shaped like /proc/cpuinfo, /proc/self/cgroup and /sys/fs/cgroup.
#include "base/cpu_budget.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace qvl::base {
namespace {

const std::string kDir = std::string(QVL_TEST_DATA_DIR) + "/cgroup/";

std::string fixture(const std::string& name) {
    std::ifstream in(kDir + name);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_TRUE(in.good() || in.eof()) << name;
    return ss.str();
}

TEST(CpuBudget, CountsPhysicalCoresAmongAllowedCpus) {
    const std::string info = fixture("cpuinfo_2x2ht");
    EXPECT_EQ(physical_cores_among(info, {0, 1, 2, 3, 4, 5}), 3);  // 2 sockets, 3 cores
    EXPECT_EQ(physical_cores_among(info, {0, 2}), 1);              // hyperthread siblings
    EXPECT_EQ(physical_cores_among(info, {0}), 1);                 // taskset -c 0
    EXPECT_EQ(physical_cores_among(info, {1, 4}), 2);
    EXPECT_EQ(physical_cores_among(info, {9}), 0);
    EXPECT_EQ(physical_cores_among(fixture("cpuinfo_no_topology"), {0, 1}), 2);
    EXPECT_EQ(physical_cores_among("garbage\n:::\nprocessor: x\n", {0}), 0);
}

TEST(CpuBudget, ParsesCgroupQuotaFiles) {
    EXPECT_DOUBLE_EQ(parse_cpu_max("200000 100000\n").value(), 2.0);
    EXPECT_DOUBLE_EQ(parse_cpu_max("50000 100000").value(), 0.5);
    EXPECT_FALSE(parse_cpu_max("max 100000\n"));
    EXPECT_FALSE(parse_cpu_max(""));
    EXPECT_FALSE(parse_cpu_max("12"));
    EXPECT_FALSE(parse_cpu_max("-5 100000"));
    EXPECT_FALSE(parse_cpu_max("100 0"));
    EXPECT_DOUBLE_EQ(parse_cfs_quota("150000\n", "100000\n").value(), 1.5);
    EXPECT_FALSE(parse_cfs_quota("-1\n", "100000\n"));
    EXPECT_FALSE(parse_cfs_quota("abc", "100000"));
}

TEST(CpuBudget, ReadsTheTightestQuotaUpTheCgroupTree) {
    // v2: the pod allows 4 CPUs but its parent 1.5; the root is unlimited.
    EXPECT_DOUBLE_EQ(cgroup_cpu_quota(fixture("v2/proc_self_cgroup"), kDir + "v2/sys").value(),
                     1.5);
    EXPECT_FALSE(cgroup_cpu_quota(fixture("v2_unlimited/proc_self_cgroup"), kDir + "v2_unlimited/sys"));
    // v1: cpu,cpuacct controller, the container's group has 2.5 CPUs, the root none.
    EXPECT_DOUBLE_EQ(cgroup_cpu_quota(fixture("v1/proc_self_cgroup"), kDir + "v1/sys").value(),
                     2.5);
    EXPECT_FALSE(cgroup_cpu_quota("", kDir + "v1/sys"));
    EXPECT_FALSE(cgroup_cpu_quota("0::/not/there\n", kDir + "nowhere"));
}

TEST(CpuBudget, ThreadsAreCoresWithinTheQuota) {
    EXPECT_EQ(make_thread_budget(8, 16, std::nullopt).threads, 8);
    EXPECT_EQ(make_thread_budget(8, 16, 1.5).threads, 2);   // --cpus 1.5: two threads
    EXPECT_EQ(make_thread_budget(8, 16, 0.2).threads, 1);   // never zero
    EXPECT_EQ(make_thread_budget(2, 2, 4.0).threads, 2);    // a quota above the cores
    EXPECT_EQ(make_thread_budget(0, 0, std::nullopt).threads, 1);
    const ThreadBudget b = make_thread_budget(4, 8, 2.0);
    EXPECT_NE(b.reason.find("4 physical cores among 8 allowed CPUs"), std::string::npos) << b.reason;
    EXPECT_NE(b.reason.find("quota 2"), std::string::npos) << b.reason;
}

TEST(CpuBudget, ThisProcessHasABudget) {
    const ThreadBudget& b = default_thread_budget();
    EXPECT_GE(b.threads, 1);
    EXPECT_LE(b.threads, int(allowed_cpus().size()));
    EXPECT_FALSE(b.reason.empty());
}

}  // namespace
}  // namespace qvl::base
