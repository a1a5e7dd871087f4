// bf16 K/V (the text KV arena outside f32 precision, kernels/attention.h KvType): every tier,
// with and without round_bf16, on odd shapes and tails, must
//   - agree with the scalar reference given the same bf16 K/V,
//   - give bit-identically what it gives on f32 K/V holding the same (already rounded) values:
//     the widening is exact, so bf16 storage changes the bytes read and nothing else,
//   - not depend on the task split,
// for both formulations a tier may pick (AttentionArgs::incremental, tried on causal shapes).
#include <cmath>
#include <cstdint>
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

using testing::all_close;

struct Shape {
    int n_q, n_kv, group, head_dim;
    bool causal;
    int row_pad;  // K/V row stride = head_dim + row_pad (odd pads: rows off alignment)
    bool incremental = false;
};

// K and V in a [kv_head][max_ctx][row stride] arena, once as bf16 bits and once as the f32
// values those bits stand for; q dense; out rows padded by one float.
class KvProblem {
  public:
    static constexpr int kKvHeads = 2;

    KvProblem(const Shape& s, std::uint32_t seed) : s_(s) {
        n_heads_ = kKvHeads * s.group;
        row_ = s.head_dim + s.row_pad;
        max_ctx_ = s.n_kv + 3;
        head_stride_ = std::ptrdiff_t(max_ctx_) * row_;
        q_.resize(std::size_t(s.n_q) * n_heads_ * s.head_dim);
        testing::fill_uniform(q_.data(), q_.size(), -2.0f, 2.0f, seed);
        // One element in front of each buffer: K/V start off any alignment.
        const std::size_t n = 2 * std::size_t(kKvHeads) * head_stride_ + 1;
        kv_f32_.resize(n);
        kv_bf16_.resize(n);
        testing::fill_uniform(kv_f32_.data(), n, -2.0f, 2.0f, seed + 1);
        for (std::size_t i = 0; i < n; ++i) {
            kv_bf16_[i] = base::f32_to_bf16(kv_f32_[i]).bits;
            kv_f32_[i] = base::bf16_to_f32({kv_bf16_[i]});
        }
    }

    AttentionArgs args(KvType type, bool round_bf16, std::vector<float>* out) const {
        const int hd = s_.head_dim;
        out->assign(std::size_t(s_.n_q) * (n_heads_ * hd + 1), NAN);
        AttentionArgs a{.n_q = s_.n_q,
                        .n_kv = s_.n_kv,
                        .n_heads = n_heads_,
                        .n_kv_heads = kKvHeads,
                        .head_dim = hd};
        a.q = q_.data();
        a.q_row_stride = n_heads_ * hd;
        a.q_head_stride = hd;
        const std::ptrdiff_t v_off = 1 + kKvHeads * head_stride_;
        if (type == KvType::kBF16) {
            a.k = kv_bf16_.data() + 1;
            a.v = kv_bf16_.data() + v_off;
        } else {
            a.k = kv_f32_.data() + 1;
            a.v = kv_f32_.data() + v_off;
        }
        a.kv_type = type;
        a.k_row_stride = a.v_row_stride = row_;
        a.k_head_stride = a.v_head_stride = head_stride_;
        a.out = out->data();
        a.out_row_stride = n_heads_ * hd + 1;
        a.out_head_stride = hd;
        a.scale = 1.0f / std::sqrt(float(hd));
        a.causal = s_.causal;
        a.q_pos0 = s_.causal ? s_.n_kv - s_.n_q : 0;
        a.round_bf16 = round_bf16;
        a.incremental = s_.incremental;
        return a;
    }

    std::vector<float> run(Isa isa, KvType type, bool round_bf16, int n_threads) const {
        std::vector<float> out;
        const AttentionArgs a = args(type, round_bf16, &out);
        const int n = attention_num_tasks(a, n_threads);
        for (int t = n - 1; t >= 0; --t) kernels_for(isa).attention_task(a, t, n);
        return out;
    }

    int n_heads() const { return n_heads_; }

  private:
    Shape s_;
    int n_heads_ = 0, row_ = 0, max_ctx_ = 0;
    std::ptrdiff_t head_stride_ = 0;
    std::vector<float> q_, kv_f32_;
    std::vector<std::uint16_t> kv_bf16_;
};

// (tier, K/V element type, round_bf16)
using Param = std::tuple<Isa, KvType, bool>;

class AttentionKvTypeTest : public ::testing::TestWithParam<Param> {};

TEST_P(AttentionKvTypeTest, MatchesReferenceAndF32OnTheSameValues) {
    const auto [isa, type, round_bf16] = GetParam();
    QVL_SKIP_IF_UNSUPPORTED(isa);
    int cases = 0;
    // 72 and 12: the portable kernel's head dims on the AVX-512 and AVX2 tiers.
    for (int hd : {64, 128, 16, 72, 12}) {
        for (int group : {1, 2, 3}) {
            for (int n_kv : {1, 3, 17, 65, 130}) {
                for (auto [causal, incremental] :
                     {std::pair{false, false}, {true, false}, {true, true}}) {
                    for (int n_q : {1, 3, 7}) {
                        if (n_q > n_kv) continue;
                        const int pad = (n_kv + hd + group) % 3 == 0 ? 0 : 1 + 2 * (n_kv % 2);
                        const Shape s{n_q, n_kv, group, hd, causal, pad, incremental};
                        const KvProblem p(s, std::uint32_t(hd * 1000 + n_kv * 10 + group));
                        const std::string what =
                            "hd=" + std::to_string(hd) + " group=" + std::to_string(group) +
                            " n_kv=" + std::to_string(n_kv) + " n_q=" + std::to_string(n_q) +
                            (causal ? " causal" : "") + (incremental ? " incremental" : "") +
                            " pad=" + std::to_string(pad);
                        const std::vector<float> got = p.run(isa, type, round_bf16, 2);
                        // The reference in double on the same K/V; bf16 products (where the
                        // tier has them) err by a few 1e-3 on outputs of magnitude ~0.3.
                        const std::vector<float> ref = p.run(Isa::kScalar, type, false, 1);
                        const bool bf16_products = round_bf16 && isa == Isa::kAvx512Bf16;
                        const double rel = bf16_products ? 0.05 : 2e-5;
                        const double floor = bf16_products ? 0.3 : 0.25;
                        ASSERT_TRUE(all_close(got.data(), ref.data(), got.size(), rel, floor))
                            << what;
                        // Exactly what the same tier computes from f32 K/V of these values.
                        const std::vector<float> f32 = p.run(isa, KvType::kF32, round_bf16, 2);
                        ASSERT_EQ(std::memcmp(got.data(), f32.data(), sizeof(float) * got.size()),
                                  0)
                            << what << ": differs from f32 K/V holding the same values";
                        const std::vector<float> split = p.run(isa, type, round_bf16, 5);
                        ASSERT_EQ(std::memcmp(got.data(), split.data(), sizeof(float) * got.size()),
                                  0)
                            << what << ": depends on the task split";
                        ++cases;
                    }
                }
            }
        }
    }
    EXPECT_EQ(cases, 540);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
    const auto& [isa, type, round_bf16] = info.param;
    return std::string(isa_name(isa)) + (type == KvType::kBF16 ? "_kvbf16" : "_kvf32") +
           (round_bf16 ? "_roundbf16" : "_f32products");
}

INSTANTIATE_TEST_SUITE_P(AllIsas, AttentionKvTypeTest,
                         ::testing::Combine(::testing::ValuesIn(all_isas()),
                                            ::testing::Values(KvType::kF32, KvType::kBF16),
                                            ::testing::Bool()),
                         param_name);

}  // namespace
}  // namespace qvl::kernels
