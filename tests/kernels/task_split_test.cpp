// The task splits for many-core machines, checked on this one: for every thread count 1..64 the
// real kernels run with the split they would get on that many threads (the tasks executed on a
// 2-thread pool) and give the same bits as with one thread; and the work the scaling trace
// assigns to each task (kernels/task_work.h) adds up to the problem's and counts the tasks the
// kernels run.
#include <cstring>
#include <vector>

#include "base/bf16.h"
#include "base/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "kernels/kernel_table.h"
#include "kernels/task_work.h"

namespace qvl::kernels {
namespace {

constexpr int kMaxThreads = 64;

struct GemmShape {
    int m, n, k;
    bool gated;
};

class TaskSplitTest : public ::testing::TestWithParam<Isa> {};

TEST_P(TaskSplitTest, GemmBitsDoNotDependOnTheSplit) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    const KernelTable& table = kernels_for(GetParam());
    base::ThreadPool pool(2);
    // Decode (1 and 4 rows), a short chunk, a packed-path GEMM; n small (the GEMV k-split case)
    // and wide.
    for (const GemmShape s : {GemmShape{1, 320, 1000, false}, GemmShape{4, 256, 2048, true},
                              GemmShape{30, 1100, 130, false}, GemmShape{150, 700, 300, false}}) {
        std::vector<float> a(std::size_t(s.m) * s.k);
        std::vector<std::uint16_t> w(std::size_t(s.n) * s.k), u(w.size());
        testing::fill_uniform(a.data(), a.size(), -1.f, 1.f, 5);
        std::vector<float> tmp(w.size());
        testing::fill_uniform(tmp.data(), tmp.size(), -1.f, 1.f, 6);
        for (std::size_t i = 0; i < w.size(); ++i) w[i] = base::f32_to_bf16(tmp[i]).bits;
        testing::fill_uniform(tmp.data(), tmp.size(), -1.f, 1.f, 7);
        for (std::size_t i = 0; i < u.size(); ++i) u[i] = base::f32_to_bf16(tmp[i]).bits;
        for (const GemmPrecision prec : {GemmPrecision::kF32, GemmPrecision::kBF16}) {
            std::vector<float> ref(std::size_t(s.m) * s.n), out(ref.size());
            GemmArgs args{.m = s.m,
                          .n = s.n,
                          .k = s.k,
                          .a = a.data(),
                          .lda = s.k,
                          .w = w.data(),
                          .w_up = s.gated ? u.data() : nullptr,
                          .ldw = s.k,
                          .w_type = WeightType::kBF16,
                          .c = ref.data(),
                          .ldc = s.n,
                          .precision = prec};
            table.gemm(args);
            args.c = out.data();
            for (int t = 1, last = 0; t <= kMaxThreads; ++t) {
                const int nt = gemm_num_tasks(args, t);
                if (nt == last) continue;  // the split depends on the task count only
                last = nt;
                std::fill(out.begin(), out.end(), -7.f);
                pool.parallel_for(nt, [&](int i) { table.gemm_task(args, i, nt); });
                ASSERT_EQ(0, std::memcmp(ref.data(), out.data(), ref.size() * sizeof(float)))
                    << "m=" << s.m << " n=" << s.n << " threads=" << t;
            }
        }
    }
}

TEST_P(TaskSplitTest, AttentionBitsDoNotDependOnTheSplit) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    const KernelTable& table = kernels_for(GetParam());
    base::ThreadPool pool(2);
    constexpr int kHeads = 16, kKvHeads = 8, kDim = 128, kCtx = 300;
    std::vector<float> q(std::size_t(24) * kHeads * kDim);
    std::vector<std::uint16_t> kv(2 * std::size_t(kKvHeads) * kCtx * kDim);
    testing::fill_uniform(q.data(), q.size(), -2.f, 2.f, 8);
    std::vector<float> tmp(kv.size());
    testing::fill_uniform(tmp.data(), tmp.size(), -2.f, 2.f, 9);
    for (std::size_t i = 0; i < kv.size(); ++i) kv[i] = base::f32_to_bf16(tmp[i]).bits;
    // A decode step late in a long context, and a prefill chunk.
    for (const int n_q : {1, 24}) {
        for (const bool round : {false, true}) {
            AttentionArgs a{.n_q = n_q,
                            .n_kv = kCtx,
                            .n_heads = kHeads,
                            .n_kv_heads = kKvHeads,
                            .head_dim = kDim,
                            .q = q.data(),
                            .q_row_stride = kHeads * kDim,
                            .q_head_stride = kDim,
                            .k = kv.data(),
                            .k_row_stride = kDim,
                            .k_head_stride = kCtx * kDim,
                            .v = kv.data() + std::size_t(kKvHeads) * kCtx * kDim,
                            .v_row_stride = kDim,
                            .v_head_stride = kCtx * kDim,
                            .out_row_stride = kHeads * kDim,
                            .out_head_stride = kDim,
                            .scale = 0.088f,
                            .causal = true,
                            .q_pos0 = kCtx - n_q,
                            .round_bf16 = round,
                            .kv_type = KvType::kBF16,
                            .incremental = true};
            std::vector<float> ref(std::size_t(n_q) * kHeads * kDim), out(ref.size());
            a.out = ref.data();
            const int n1 = attention_num_tasks(a, 1);
            for (int i = 0; i < n1; ++i) table.attention_task(a, i, n1);
            a.out = out.data();
            for (int t = 1, last = 0; t <= kMaxThreads; ++t) {
                const int nt = attention_num_tasks(a, t);
                if (nt == last) continue;
                last = nt;
                std::fill(out.begin(), out.end(), -7.f);
                pool.parallel_for(nt, [&](int i) { table.attention_task(a, i, nt); });
                ASSERT_EQ(0, std::memcmp(ref.data(), out.data(), ref.size() * sizeof(float)))
                    << "n_q=" << n_q << " round=" << round << " threads=" << t;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Tiers, TaskSplitTest,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512,
                                           Isa::kAvx512Bf16),
                         testing::isa_param_name);

double sum_flops(const std::vector<base::TaskWork>& tasks) {
    double f = 0;
    for (const base::TaskWork& t : tasks) f += t.flops;
    return f;
}

TEST(TaskWork, GemmTasksCoverTheProblemOnce) {
    const KernelTable& table = kernels_for(Isa::kScalar);
    for (const GemmShape s :
         {GemmShape{1, 151936, 2048, false}, GemmShape{4, 6144, 2048, true},
          GemmShape{212, 2048, 2048, false}, GemmShape{3520, 4096, 1024, false}}) {
        const GemmArgs args{.m = s.m, .n = s.n, .k = s.k, .w_up = s.gated ? &table : nullptr};
        for (int t = 1; t <= kMaxThreads; ++t) {
            std::vector<base::TaskWork> tasks;
            gemm_task_work(table, args, t, &tasks);
            EXPECT_EQ(int(tasks.size()), gemm_num_tasks(args, t));
            EXPECT_DOUBLE_EQ(sum_flops(tasks), 2.0 * (s.gated ? 2 : 1) * s.m * double(s.n) * s.k)
                << "m=" << s.m << " threads=" << t;
        }
    }
}

TEST(TaskWork, AttentionTasksCoverEveryRowAndKey) {
    for (const int n_q : {1, 17, 3520}) {
        const AttentionArgs a{.n_q = n_q,
                              .n_kv = n_q == 1 ? 900 : n_q,
                              .n_heads = 16,
                              .n_kv_heads = n_q == 3520 ? 16 : 8,
                              .head_dim = 64,
                              .causal = n_q != 3520,
                              .q_pos0 = n_q == 1 ? 899 : 0};
        double pairs = 0;
        for (int i = 0; i < n_q; ++i) pairs += a.causal ? a.q_pos0 + i + 1 : a.n_kv;
        for (int t = 1; t <= kMaxThreads; ++t) {
            std::vector<base::TaskWork> tasks;
            attention_task_work(a, t, &tasks);
            EXPECT_EQ(int(tasks.size()), attention_num_tasks(a, t));
            EXPECT_DOUBLE_EQ(sum_flops(tasks), 4.0 * a.n_heads * a.head_dim * pairs)
                << "n_q=" << n_q << " threads=" << t;
        }
    }
}

TEST(TaskWork, RowTasksCoverEveryRowOnce) {
    for (const int rows : {1, 7, 784, 3520}) {
        for (int t = 1; t <= kMaxThreads; ++t) {
            const int n = rows_num_tasks(rows, 2048, t);
            int next = 0;
            for (int i = 0; i < n; ++i) {
                int r0 = 0, r1 = 0;
                rows_task_range(rows, i, n, &r0, &r1);
                EXPECT_EQ(r0, next);
                next = r1;
            }
            EXPECT_EQ(next, rows);
        }
    }
}

TEST(TaskTrace, OffUnlessAskedFor) {
    // The test runner does not set QVL_TASK_TRACE: tracing must be off (and so free).
    EXPECT_EQ(base::TaskTrace::active(), nullptr);
}

}  // namespace
}  // namespace qvl::kernels
