// The StoreKv op: K and V rows go to their [kv_head][pos][head_dim] places in the arena, copied
// for an f32 arena and rounded to the nearest bf16 (ties to even) for a bf16 one, and nothing
// outside the stored positions is touched. The expected bits come from the test's own rounding
// (support/bf16_round.h), not the engine's base::f32_to_bf16 that the store uses. A prompt's
// store is split over rows: the same bytes with 2 threads as with 1.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"
#include "graph/builder.h"
#include "graph/executor.h"
#include "graph/planner.h"
#include "kernels/kernel_table.h"
#include "kernels/task_work.h"
#include "support/bf16_round.h"

namespace qvl::graph {
namespace {

constexpr int kHeads = 2, kHeadDim = 4, kCtx = 6, kRows = 3, kPos0 = 2;

// Values whose bf16 rounding differs from truncation (1 + 3 * 2^-9 rounds up), ties (1 + 2^-8
// rounds to even, down; 1 + 3 * 2^-8 rounds to even, up) and plain ones.
float input_value(int i) {
    const float special[] = {1.0f + 3.0f / 512, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256,
                             -1.0f - 3.0f / 512};
    return i % 5 < 4 ? special[i % 5] * float(1 + i % 7) : 0.1f * float(i) - 1.3f;
}

// Runs one StoreKv of kRows rows at kPos0 into an arena of type `type` filled with 0xAB bytes.
std::vector<std::byte> store(kernels::KvType type, std::vector<float>* k, std::vector<float>* v) {
    const int cols = kHeads * kHeadDim;
    k->resize(std::size_t(kRows) * cols);
    v->resize(k->size());
    for (std::size_t i = 0; i < k->size(); ++i) {
        (*k)[i] = input_value(int(i));
        (*v)[i] = -input_value(int(i) + 3);
    }
    const std::size_t elem = kernels::kv_type_bytes(type);
    const std::size_t half = std::size_t(kHeads) * kCtx * kHeadDim;
    std::vector<std::byte> kv(2 * half * elem, std::byte{0xAB});
    const KvLayerView view{
        .k = kv.data(), .v = kv.data() + half * elem, .head_stride = kCtx * kHeadDim, .type = type};
    Graph g;
    GraphBuilder b(&g, kernels::GemmPrecision::kF32);
    const Tensor kt = b.input("k", k->data(), kRows, cols);
    const Tensor vt = b.input("v", v->data(), kRows, cols);
    b.store_kv("store", kt, vt, view, kPos0, kHeads, kHeadDim);
    Planner planner;
    auto arena = base::AlignedBuffer::allocate(std::max<std::size_t>(planner.plan(g), 64), "test");
    EXPECT_TRUE(arena.ok());
    base::ThreadPool pool(1);
    Executor executor(&pool, kernels::best_table());
    executor.run(g, arena.value().data());
    return kv;
}

TEST(StoreKv, Bf16ArenaHoldsTheRoundedRows) {
    std::vector<float> k, v;
    const std::vector<std::byte> kv = store(kernels::KvType::kBF16, &k, &v);
    const auto* arena = reinterpret_cast<const std::uint16_t*>(kv.data());
    const std::size_t half = std::size_t(kHeads) * kCtx * kHeadDim;
    int rounded_up = 0;
    for (int h = 0; h < kHeads; ++h) {
        for (int p = 0; p < kCtx; ++p) {
            for (int d = 0; d < kHeadDim; ++d) {
                const std::size_t at = std::size_t(h) * kCtx * kHeadDim + p * kHeadDim + d;
                if (p < kPos0 || p >= kPos0 + kRows) {
                    EXPECT_EQ(arena[at], 0xABAB) << "touched position " << p;
                    EXPECT_EQ(arena[half + at], 0xABAB) << "touched position " << p;
                    continue;
                }
                const std::size_t src =
                    std::size_t(p - kPos0) * kHeads * kHeadDim + h * kHeadDim + d;
                EXPECT_EQ(arena[at], test::rne_bf16_bits(k[src])) << "k " << h << " " << p;
                EXPECT_EQ(arena[half + at], test::rne_bf16_bits(v[src])) << "v " << h << " " << p;
                std::uint32_t bits;
                std::memcpy(&bits, &k[src], sizeof bits);
                rounded_up += arena[at] != std::uint16_t(bits >> 16);
            }
        }
    }
    EXPECT_GT(rounded_up, 0) << "no value where rounding differs from truncation";
}

TEST(StoreKv, F32ArenaHoldsTheRowsExactly) {
    std::vector<float> k, v;
    const std::vector<std::byte> kv = store(kernels::KvType::kF32, &k, &v);
    const auto* arena = reinterpret_cast<const float*>(kv.data());
    const std::size_t half = std::size_t(kHeads) * kCtx * kHeadDim;
    for (int h = 0; h < kHeads; ++h) {
        for (int r = 0; r < kRows; ++r) {
            const std::size_t at = std::size_t(h) * kCtx * kHeadDim + (kPos0 + r) * kHeadDim;
            const std::size_t src = std::size_t(r) * kHeads * kHeadDim + h * kHeadDim;
            for (int d = 0; d < kHeadDim; ++d) {
                EXPECT_EQ(arena[at + d], k[src + d]);
                EXPECT_EQ(arena[half + at + d], v[src + d]);
            }
        }
    }
}

// A 448x448 prompt chunk's shape (8 kv heads of 128): several row tasks on 2 threads, and the
// arena the same bytes as on 1 thread, each stored row its own rounding.
TEST(StoreKv, SplitPromptStoresTheSameBytesAsOneThread) {
    constexpr int heads = 8, dim = 128, ctx = 64, rows = 40, pos0 = 9, cols = heads * dim;
    ASSERT_GT(kernels::rows_num_tasks(rows, 2 * cols, 2), 1) << "the store would not be split";
    std::vector<float> k(std::size_t(rows) * cols), v(k.size());
    for (std::size_t i = 0; i < k.size(); ++i) {
        k[i] = input_value(int(i));
        v[i] = -input_value(int(i) + 3);
    }
    const std::size_t half = std::size_t(heads) * ctx * dim;
    auto run = [&](int threads) {
        std::vector<std::uint16_t> kv(2 * half, 0xABAB);
        const KvLayerView view{.k = kv.data(),
                               .v = kv.data() + half,
                               .head_stride = ctx * dim,
                               .type = kernels::KvType::kBF16};
        Graph g;
        GraphBuilder b(&g, kernels::GemmPrecision::kF32);
        b.store_kv("store", b.input("k", k.data(), rows, cols), b.input("v", v.data(), rows, cols),
                   view, pos0, heads, dim);
        Planner planner;
        auto arena =
            base::AlignedBuffer::allocate(std::max<std::size_t>(planner.plan(g), 64), "test");
        EXPECT_TRUE(arena.ok());
        base::ThreadPool pool(threads);
        Executor executor(&pool, kernels::best_table());
        executor.run(g, arena.value().data());
        return kv;
    };
    const std::vector<std::uint16_t> one = run(1), two = run(2);
    EXPECT_EQ(one, two);
    for (int r = 0; r < rows; ++r) {
        for (int h = 0; h < heads; ++h) {
            const std::size_t at = std::size_t(h) * ctx * dim + std::size_t(pos0 + r) * dim;
            const std::size_t src = std::size_t(r) * cols + std::size_t(h) * dim;
            for (int d = 0; d < dim; d += 37) {
                EXPECT_EQ(two[at + d], test::rne_bf16_bits(k[src + d])) << "row " << r;
                EXPECT_EQ(two[half + at + d], test::rne_bf16_bits(v[src + d])) << "row " << r;
            }
        }
    }
}

}  // namespace
}  // namespace qvl::graph
