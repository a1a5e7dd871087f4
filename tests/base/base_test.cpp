// Tests for engine/base: Status/Result, checked math, aligned buffers, bf16, thread pool.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/bf16.h"
#include "base/checked_math.h"
#include "base/cpu_features.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/isa.h"
#include "support/os_probe.h"

namespace qvl::base {
namespace {

Result<int> parse_positive(int v) {
    if (v <= 0) return error(ErrorCode::kInvalidArgument, "value {} is not positive", v);
    return v;
}

Result<int> doubled(int v) {
    QVL_ASSIGN_OR_RETURN(int x, parse_positive(v));
    return 2 * x;
}

Status check_both(int a, int b) {
    QVL_TRY(parse_positive(a));
    QVL_TRY(parse_positive(b));
    return Status();
}

TEST(Status, PropagatesErrorsAndValues) {
    EXPECT_EQ(doubled(4).value(), 8);
    const Result<int> bad = doubled(-3);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(bad.status().message(), "value -3 is not positive");
    EXPECT_TRUE(check_both(1, 2).ok());
    EXPECT_EQ(check_both(1, 0).message(), "value 0 is not positive");
    EXPECT_EQ(check_both(1, 0).with_context("x.json: ").message(),
              "x.json: value 0 is not positive");
}

TEST(CheckedMath, DetectsOverflow) {
    std::uint64_t out = 0;
    EXPECT_TRUE(checked_mul(1u << 20, 1u << 20, &out));
    EXPECT_EQ(out, std::uint64_t(1) << 40);
    EXPECT_FALSE(checked_mul(std::uint64_t(1) << 33, std::uint64_t(1) << 31, &out));
    EXPECT_FALSE(checked_add(std::numeric_limits<std::uint64_t>::max(), 1, &out));
    EXPECT_TRUE(checked_product({151936, 2048, 2}, &out));
    EXPECT_EQ(out, 622329856u);
    EXPECT_FALSE(checked_product({1u << 30, 1u << 30, 1u << 30}, &out));
}

TEST(AlignedBuffer, IsAlignedZeroedAndMovable) {
    Result<AlignedBuffer> r = AlignedBuffer::allocate(1000, "test");
    ASSERT_TRUE(r.ok());
    AlignedBuffer buf = std::move(r).value();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf.data()) % 64, 0u);
    EXPECT_EQ(buf.size(), 1000u);
    for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf.data()[i], std::byte{0});
    AlignedBuffer moved = std::move(buf);
    EXPECT_EQ(moved.size(), 1000u);
    EXPECT_TRUE(AlignedBuffer::allocate(0, "empty")->empty());
    const Result<AlignedBuffer> huge = AlignedBuffer::allocate(std::size_t(1) << 62, "huge");
    ASSERT_FALSE(huge.ok());
    EXPECT_EQ(huge.status().code(), ErrorCode::kResourceExhausted);
}

// Resident set size of this process, from /proc/self/statm (pages).
std::size_t resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0;
    unsigned long size = 0, resident = 0;
    const int got = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    return got == 2 ? std::size_t(resident) * std::size_t(sysconf(_SC_PAGESIZE)) : 0;
}

TEST(AlignedBuffer, PopulateMapsTheRangeAndKeepsTheContents) {
    constexpr std::size_t kBytes = std::size_t(64) << 20;
    auto buf = AlignedBuffer::allocate(kBytes, "test", false).value();
    buf.data()[100] = std::byte{42};
    buf.data()[kBytes - 1] = std::byte{7};
    const std::size_t before = resident_bytes();
    // The kernel feature is probed apart from populate(): when the kernel has it, populate()
    // failing is the defect under test, not a reason to skip.
    if (!test::kernel_has_populate_write()) {
        GTEST_SKIP() << "[kernel-feature] madvise(MADV_POPULATE_WRITE) is refused by this kernel";
    }
    ASSERT_TRUE(buf.populate(std::size_t(1) << 20, std::size_t(32) << 20));
    EXPECT_GE(resident_bytes(), before + (std::size_t(30) << 20));
    EXPECT_EQ(buf.data()[100], std::byte{42});
    EXPECT_EQ(buf.data()[kBytes - 1], std::byte{7});
    EXPECT_EQ(buf.data()[std::size_t(2) << 20], std::byte{0});
    // Ranges past the end are clipped or ignored, never an error or a crash.
    EXPECT_TRUE(buf.populate(kBytes - 8192, std::size_t(1) << 40));
    EXPECT_FALSE(buf.populate(kBytes, 4096));
    EXPECT_FALSE(buf.populate(0, 0));
    AlignedBuffer empty;
    EXPECT_FALSE(empty.populate(0, 4096));
}

TEST(Bf16, RoundsToNearestEven) {
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
    EXPECT_EQ(round_to_bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);
    // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
    EXPECT_EQ(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
    EXPECT_EQ(round_to_bf16(-2.5f), -2.5f);
    EXPECT_TRUE(std::isnan(round_to_bf16(std::nanf(""))));
    EXPECT_TRUE(std::isinf(round_to_bf16(std::numeric_limits<float>::infinity())));
    EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
    EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
}

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
    for (int threads : {1, 2, 3, 8}) {
        ThreadPool pool(threads);
        EXPECT_EQ(pool.size(), threads);
        for (int n_tasks : {0, 1, 2, 7, 1000}) {
            std::vector<std::atomic<int>> hits(n_tasks);
            for (int rep = 0; rep < 3; ++rep) {
                pool.parallel_for(n_tasks, [&](int t) { hits[t].fetch_add(1); });
            }
            for (int t = 0; t < n_tasks; ++t) ASSERT_EQ(hits[t].load(), 3) << "task " << t;
        }
    }
}

TEST(ThreadPool, RunOnEachThreadVisitsEveryThreadOnce) {
    for (int threads : {1, 2, 3, 8}) {
        ThreadPool pool(threads);
        for (int rep = 0; rep < 20; ++rep) {
            std::mutex mu;
            std::set<std::thread::id> ids;
            std::vector<int> indices;
            pool.run_on_each_thread([&](int i) {
                const std::lock_guard<std::mutex> lock(mu);
                ids.insert(std::this_thread::get_id());
                indices.push_back(i);
            });
            ASSERT_EQ(int(ids.size()), threads);
            ASSERT_EQ(int(indices.size()), threads);
            std::sort(indices.begin(), indices.end());
            for (int i = 0; i < threads; ++i) ASSERT_EQ(indices[i], i);
        }
    }
}

TEST(CpuFeatures, AreConsistent) {
    const CpuFeatures& f = cpu_features();
    EXPECT_GE(f.physical_cores, 1);
    if (f.avx512f) {
        EXPECT_TRUE(f.avx2);
    }
    EXPECT_TRUE(kernels::isa_supported(kernels::Isa::kScalar));
    EXPECT_TRUE(kernels::isa_supported(kernels::best_isa()));
    kernels::Isa isa;
    EXPECT_TRUE(kernels::parse_isa("avx512bf16", &isa));
    EXPECT_EQ(isa, kernels::Isa::kAvx512Bf16);
    EXPECT_FALSE(kernels::parse_isa("sse9", &isa));
}

}  // namespace
}  // namespace qvl::base
