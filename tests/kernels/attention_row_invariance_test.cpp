// Attention row invariance: the output of query row p (absolute position p, causal over a KV
// arena) is bit-identical whether the row is computed in one prefill call of all rows, in a
// chunked prefill (any chunk sizes), as a decode step (n_q = 1), or with any task split. Prefix
// reuse and batched decode rely on it: a cached prefix must hold exactly what a cold prefill
// would have written, and a sequence's decode logits must not depend on the batch. The same
// holds with the arena in bf16 (KvType::kBF16, the default outside f32 precision), and for
// both formulations a tier may pick (AttentionArgs::incremental: the AVX2 kernel's scores with
// head_dim or keys in lanes).
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "base/bf16.h"
#include "kernel_test_util.h"
#include "kernels/attention.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels {
namespace {

// (tier, round_bf16, head_dim, query heads per kv head, K/V element type, incremental)
using Param = std::tuple<Isa, bool, int, int, KvType, bool>;

class AttentionRowInvarianceTest : public ::testing::TestWithParam<Param> {
  protected:
    static constexpr int kKvHeads = 2;
    static constexpr int kPositions = 150;  // crosses 64-key blocks and 32-item granules

    void SetUp() override {
        std::tie(isa_, round_bf16_, head_dim_, group_, kv_type_, incremental_) = GetParam();
        n_heads_ = kKvHeads * group_;
        row_ = n_heads_ * head_dim_;
        max_ctx_ = kPositions + 3;
        q_.resize(std::size_t(kPositions) * row_);
        kv_.resize(2 * std::size_t(kKvHeads) * max_ctx_ * head_dim_);
        testing::fill_uniform(q_.data(), q_.size(), -2.0f, 2.0f, 11 + head_dim_ + group_);
        testing::fill_uniform(kv_.data(), kv_.size(), -2.0f, 2.0f, 12 + head_dim_ * group_);
        if (kv_type_ == KvType::kBF16) {
            kv16_.resize(kv_.size());
            for (std::size_t i = 0; i < kv_.size(); ++i) kv16_[i] = base::f32_to_bf16(kv_[i]).bits;
        }
    }

    // Rows [q0, q0 + n) against keys [0, q0 + n), written to out rows [q0, q0 + n).
    void run(int q0, int n, int n_threads, std::vector<float>* out) const {
        AttentionArgs a{.n_q = n,
                        .n_kv = q0 + n,
                        .n_heads = n_heads_,
                        .n_kv_heads = kKvHeads,
                        .head_dim = head_dim_};
        a.q = q_.data() + std::size_t(q0) * row_;
        a.q_row_stride = row_;
        a.q_head_stride = head_dim_;
        const std::size_t v_off = std::size_t(kKvHeads) * max_ctx_ * head_dim_;
        if (kv_type_ == KvType::kBF16) {
            a.k = kv16_.data();
            a.v = kv16_.data() + v_off;
        } else {
            a.k = kv_.data();
            a.v = kv_.data() + v_off;
        }
        a.kv_type = kv_type_;
        a.k_row_stride = a.v_row_stride = head_dim_;
        a.k_head_stride = a.v_head_stride = std::ptrdiff_t(max_ctx_) * head_dim_;
        a.out = out->data() + std::size_t(q0) * row_;
        a.out_row_stride = row_;
        a.out_head_stride = head_dim_;
        a.scale = 1.0f / std::sqrt(float(head_dim_));
        a.causal = true;
        a.q_pos0 = q0;
        a.round_bf16 = round_bf16_;
        a.incremental = incremental_;
        const int tasks = attention_num_tasks(a, n_threads);
        for (int t = tasks - 1; t >= 0; --t) kernels_for(isa_).attention_task(a, t, tasks);
    }

    std::vector<float> prefill(int n_threads) const {
        std::vector<float> out(q_.size(), NAN);
        run(0, kPositions, n_threads, &out);
        return out;
    }

    // First row whose bits differ, or -1.
    int first_different_row(const std::vector<float>& a, const std::vector<float>& b) const {
        for (int p = 0; p < kPositions; ++p) {
            if (std::memcmp(a.data() + std::size_t(p) * row_, b.data() + std::size_t(p) * row_,
                            sizeof(float) * row_) != 0) {
                return p;
            }
        }
        return -1;
    }

    Isa isa_ = Isa::kScalar;
    bool round_bf16_ = false;
    int head_dim_ = 0, group_ = 0, n_heads_ = 0, row_ = 0, max_ctx_ = 0;
    KvType kv_type_ = KvType::kF32;
    bool incremental_ = false;
    std::vector<float> q_, kv_;
    std::vector<std::uint16_t> kv16_;
};

TEST_P(AttentionRowInvarianceTest, PrefillChunkedAndDecodeRowsAreBitIdentical) {
    QVL_SKIP_IF_UNSUPPORTED(isa_);
    const std::vector<float> whole = prefill(1);
    for (float x : whole) ASSERT_FALSE(std::isnan(x)) << "prefill left a row unwritten";

    EXPECT_EQ(first_different_row(prefill(3), whole), -1) << "prefill depends on the task split";

    for (const std::vector<int>& chunks :
         {std::vector<int>{1, 5, 17, 40, 87}, {64, 64, 22}, {3, 31, 33, 83}, {149, 1}}) {
        std::vector<float> chunked(q_.size(), NAN);
        int q0 = 0;
        for (int n : chunks) {
            run(q0, n, 2, &chunked);
            q0 += n;
        }
        ASSERT_EQ(q0, kPositions);
        std::string sizes;
        for (int n : chunks) sizes += std::to_string(n) + " ";
        EXPECT_EQ(first_different_row(chunked, whole), -1) << "chunks " << sizes;
    }

    std::vector<float> decoded(q_.size(), NAN);
    for (int p = 0; p < kPositions; ++p) run(p, 1, 2, &decoded);
    EXPECT_EQ(first_different_row(decoded, whole), -1) << "decode rows";
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
    const auto& [isa, bf16, hd, group, kv_type, incremental] = info.param;
    return std::string(isa_name(isa)) + (bf16 ? "_bf16" : "_f32") + "_hd" + std::to_string(hd) +
           "_group" + std::to_string(group) + (kv_type == KvType::kBF16 ? "_kvbf16" : "_kvf32") +
           (incremental ? "_incremental" : "");
}

INSTANTIATE_TEST_SUITE_P(AllIsas, AttentionRowInvarianceTest,
                         ::testing::Combine(::testing::ValuesIn(all_isas()), ::testing::Bool(),
                                            ::testing::Values(64, 128, 16, 24),
                                            ::testing::Values(1, 2, 4),
                                            ::testing::Values(KvType::kF32, KvType::kBF16),
                                            ::testing::Bool()),
                         param_name);

}  // namespace
}  // namespace qvl::kernels
