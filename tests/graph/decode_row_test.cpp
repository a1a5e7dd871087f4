// A decode row's attention with its preparation fused in (GraphBuilder::attention_decode_row,
// graph/decode_row.h) against the separate nodes a prefill runs (per-head RMSNorm of q and k,
// RoPE, StoreKv, cached attention, rows scattered into the batch): the output rows and the
// caches must be the same bits, on every kernel tier, for f32 and bf16 caches and both attention
// precisions, with 1 and 2 threads; and the node's split (one task per kv head, which the fusion
// relies on) must be the same for every thread count 1..64, so those two runs stand for all.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/bf16.h"
#include "base/thread_pool.h"
#include "graph/builder.h"
#include "graph/executor.h"
#include "graph/planner.h"
#include "kernels/attention.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_test_util.h"

namespace qvl::graph {
namespace {

using kernels::Isa;
using kernels::KvType;

constexpr int kHeads = 16, kKvHeads = 8, kDim = 128, kCtx = 48, kRows = 3;
constexpr int kQCols = kHeads * kDim, kKvCols = kKvHeads * kDim;
constexpr int kPos[kRows] = {5, 46, 17};  // each row's position in its own sequence
constexpr float kEps = 1e-6f;

// One test case's inputs: the q|k|v rows (as a fused qkv product leaves them), RoPE tables,
// norm weights and every sequence's cache with keys and values below the row's position.
struct Inputs {
    std::vector<float> qkv, cos, sin, q_norm, k_norm;
    std::vector<std::vector<std::byte>> caches;
    KvType type = KvType::kF32;

    KvLayerView view(int i) {
        const std::size_t elem = kernels::kv_type_bytes(type);
        std::byte* k = caches[std::size_t(i)].data();
        return {.k = k,
                .v = k + std::size_t(kKvHeads) * kCtx * kDim * elem,
                .head_stride = kCtx * kDim,
                .type = type};
    }
};

Inputs make_inputs(KvType type) {
    Inputs in;
    in.type = type;
    in.qkv.resize(std::size_t(kRows) * (kQCols + 2 * kKvCols));
    kernels::testing::fill_uniform(in.qkv.data(), in.qkv.size(), -3.f, 3.f, 21);
    in.cos.resize(std::size_t(kRows) * kDim / 2);
    in.sin.resize(in.cos.size());
    kernels::testing::fill_uniform(in.cos.data(), in.cos.size(), -1.f, 1.f, 22);
    kernels::testing::fill_uniform(in.sin.data(), in.sin.size(), -1.f, 1.f, 23);
    in.q_norm.resize(kDim);
    in.k_norm.resize(kDim);
    kernels::testing::fill_uniform(in.q_norm.data(), kDim, 0.5f, 1.5f, 24);
    kernels::testing::fill_uniform(in.k_norm.data(), kDim, 0.5f, 1.5f, 25);
    const std::size_t elem = kernels::kv_type_bytes(type);
    const std::size_t half = std::size_t(kKvHeads) * kCtx * kDim;
    std::vector<float> values(2 * half);
    for (int i = 0; i < kRows; ++i) {
        kernels::testing::fill_uniform(values.data(), values.size(), -2.f, 2.f, 30 + i);
        std::vector<std::byte>& c = in.caches.emplace_back(2 * half * elem, std::byte{0xAB});
        for (std::size_t j = 0; j < 2 * half; ++j) {
            if (int(j % (kCtx * kDim)) / kDim >= kPos[i]) continue;  // not yet stored
            if (type == KvType::kBF16) {
                const base::bf16 b = base::f32_to_bf16(values[j]);
                std::memcpy(c.data() + 2 * j, &b, 2);
            } else {
                std::memcpy(c.data() + 4 * j, &values[j], 4);
            }
        }
    }
    return in;
}

AttentionOptions options(int pos0) {
    return {.n_heads = kHeads,
            .n_kv_heads = kKvHeads,
            .head_dim = kDim,
            .scale = 0.0884f,
            .causal = true,
            .pos0 = pos0};
}

// The attention output rows [kRows, kQCols], computed the prefill way (fused = false) or by the
// fused decode rows; in->caches receive the rows' K/V.
std::vector<float> run(Inputs* in, bool fused, kernels::GemmPrecision precision, Isa isa,
                       int threads) {
    Graph g;
    GraphBuilder b(&g, kernels::GemmPrecision::kF32, precision);
    std::vector<float> qkv = in->qkv;  // the fused rows finish q and k in place
    const Tensor x = b.input("qkv", qkv.data(), kRows, kQCols + 2 * kKvCols);
    Tensor q = b.view(x, 0, kRows, 0, kQCols);
    Tensor k = b.view(x, 0, kRows, kQCols, kKvCols);
    const Tensor v = b.view(x, 0, kRows, kQCols + kKvCols, kKvCols);
    const Tensor cos = b.input("cos", in->cos.data(), kRows, kDim / 2);
    const Tensor sin = b.input("sin", in->sin.data(), kRows, kDim / 2);
    const Tensor out = b.activation("attn", kRows, kQCols);
    if (fused) {
        for (int i = 0; i < kRows; ++i) {
            const op::Attention::DecodePrep prep{.q_norm = in->q_norm.data(),
                                                 .k_norm = in->k_norm.data(),
                                                 .eps = kEps,
                                                 .cos = in->cos.data() + i * kDim / 2,
                                                 .sin = in->sin.data() + i * kDim / 2};
            b.attention_decode_row("attn", b.view(q, i, 1, 0, kQCols), b.view(k, i, 1, 0, kKvCols),
                                   b.view(v, i, 1, 0, kKvCols), b.view(out, i, 1, 0, kQCols),
                                   in->view(i), prep, options(kPos[i]));
        }
    } else {
        q = b.rms_norm("q_norm", q, in->q_norm.data(), kEps, kDim);
        k = b.rms_norm("k_norm", k, in->k_norm.data(), kEps, kDim);
        b.rope("q_rope", q, cos, sin, kHeads, kDim);
        b.rope("k_rope", k, cos, sin, kKvHeads, kDim);
        static constexpr std::int32_t kRowIndex[kRows] = {0, 1, 2};
        for (int i = 0; i < kRows; ++i) {
            b.store_kv("kv", b.view(k, i, 1, 0, kKvCols), b.view(v, i, 1, 0, kKvCols), in->view(i),
                       kPos[i], kKvHeads, kDim);
            const Tensor row = b.attention_cached("attn", b.view(q, i, 1, 0, kQCols), in->view(i),
                                                  kPos[i] + 1, options(kPos[i]));
            b.scatter_rows("attn_rows", out, row, &kRowIndex[i]);
        }
    }
    b.keep(out);
    Planner planner;
    auto arena = base::AlignedBuffer::allocate(planner.plan(g), "decode row test");
    EXPECT_TRUE(arena.ok());
    if (!arena.ok()) return {};
    base::ThreadPool pool(threads);
    Executor executor(&pool, kernels::kernels_for(isa));
    executor.run(g, arena.value().data());
    const float* o = executor.data(g, out, arena.value().data());
    return {o, o + std::size_t(kRows) * kQCols};
}

class DecodeRowTest : public ::testing::TestWithParam<Isa> {};

TEST_P(DecodeRowTest, FusedRowsGiveThePrefillNodesBits) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    for (const KvType type : {KvType::kF32, KvType::kBF16}) {
        for (const auto precision : {kernels::GemmPrecision::kF32, kernels::GemmPrecision::kBF16}) {
            Inputs ref_in = make_inputs(type);
            const std::vector<float> ref = run(&ref_in, false, precision, GetParam(), 1);
            for (const int threads : {1, 2}) {
                Inputs in = make_inputs(type);
                const std::vector<float> got = run(&in, true, precision, GetParam(), threads);
                const auto what = ::testing::Message() << "kv " << int(type) << " precision "
                                                       << int(precision) << " threads " << threads;
                ASSERT_EQ(got.size(), ref.size()) << what;
                EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)))
                    << what;
                for (int i = 0; i < kRows; ++i) {
                    EXPECT_EQ(in.caches[std::size_t(i)], ref_in.caches[std::size_t(i)])
                        << what << " cache of row " << i;
                }
            }
        }
    }
}

// The fusion needs task t to be kv head t (the task that reads that head's new key stores it):
// one query row gets one task per kv head whatever the thread count.
TEST(DecodeRow, OneTaskPerKvHeadForEveryThreadCount) {
    const kernels::AttentionArgs a{
        .n_q = 1, .n_kv = 900, .n_heads = kHeads, .n_kv_heads = kKvHeads, .head_dim = kDim};
    for (int t = 1; t <= 64; ++t) EXPECT_EQ(kernels::attention_num_tasks(a, t), kKvHeads) << t;
}

INSTANTIATE_TEST_SUITE_P(Tiers, DecodeRowTest,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512,
                                           Isa::kAvx512Bf16),
                         kernels::testing::isa_param_name);

}  // namespace
}  // namespace qvl::graph
