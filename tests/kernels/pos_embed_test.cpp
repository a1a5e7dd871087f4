#include "kernels/pos_embed.h"

#include <vector>

#include "base/bf16.h"
#include "kernel_test_util.h"
#include "kernels/kernel_table.h"

namespace qvl::kernels {
namespace {

using testing::all_close;
using testing::FloatBuf;

class PosEmbedTest : public ::testing::TestWithParam<Isa> {};

std::ptrdiff_t window_row(int r, int c, int gw) {
    return ((r / 2) * (gw / 2) + c / 2) * 4 + (r % 2) * 2 + c % 2;
}

TEST_P(PosEmbedTest, FullGridIsThePermutedTable) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    const int side = 6, dim = 17;
    FloatBuf table(side * side * dim), out(side * side * (dim + 1));
    testing::fill_uniform(table.data(), table.size(), -1.0f, 1.0f, 1);
    kernels_for(GetParam())
        .pos_embed_interpolate({.table = table.data(),
                                .table_type = WeightType::kF32,
                                .grid_side = side,
                                .dim = dim,
                                .gh = side,
                                .gw = side,
                                .merge = 2,
                                .out = out.data(),
                                .out_stride = dim + 1});
    for (int r = 0; r < side; ++r) {
        for (int c = 0; c < side; ++c) {
            EXPECT_TRUE(all_close(out.data() + window_row(r, c, side) * (dim + 1),
                                  table.data() + (r * side + c) * dim, dim, 0, 0))
                << r << "," << c;
        }
    }
}

TEST_P(PosEmbedTest, MatchesReferenceF32AndBf16) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    const int side = 8;
    for (int dim : {1, 16, 33, 64}) {
        for (auto [gh, gw] : {std::pair{2, 2}, {4, 10}, {12, 6}, {28, 40}}) {
            FloatBuf table(side * side * dim);
            testing::fill_uniform(table.data(), table.size(), -1.0f, 1.0f, dim);
            std::vector<base::bf16> table16(table.size());
            for (std::size_t i = 0; i < table.size(); ++i) table16[i] = base::f32_to_bf16(table[i]);
            for (WeightType type : {WeightType::kF32, WeightType::kBF16}) {
                const void* t = type == WeightType::kF32 ? static_cast<const void*>(table.data())
                                                         : table16.data();
                FloatBuf expect(gh * gw * dim), got(gh * gw * dim);
                PosEmbedArgs a{.table = t,
                               .table_type = type,
                               .grid_side = side,
                               .dim = dim,
                               .gh = gh,
                               .gw = gw,
                               .merge = 2,
                               .out = expect.data(),
                               .out_stride = dim};
                ref::pos_embed_interpolate(a);
                a.out = got.data();
                kernels_for(GetParam()).pos_embed_interpolate(a);
                // Four f32 products summed: a few ulp of the table's magnitude (1).
                EXPECT_TRUE(all_close(got.data(), expect.data(), got.size(), 4e-7, 1.0))
                    << "dim=" << dim << " grid " << gh << "x" << gw;
            }
        }
    }
}

TEST(PosEmbedRef, BilinearHandValues) {
    // side 3, dim 1, table value = 10 r + c; a 2 x 4 grid samples columns 0, 2/3, 4/3, 2:
    // the blend of a linear table is the table's linear function at the sample point.
    float table[9];
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) table[r * 3 + c] = float(10 * r + c);
    }
    std::vector<float> out(8);
    ref::pos_embed_interpolate({.table = table,
                                .table_type = WeightType::kF32,
                                .grid_side = 3,
                                .dim = 1,
                                .gh = 2,
                                .gw = 4,
                                .merge = 2,
                                .out = out.data(),
                                .out_stride = 1});
    for (int r = 0; r < 2; ++r) {
        for (int c = 0; c < 4; ++c) {
            EXPECT_NEAR(out[window_row(r, c, 4)], 10.0 * 2 * r + 2.0 * c / 3, 1e-6) << r << c;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, PosEmbedTest, ::testing::ValuesIn(all_isas()),
                         testing::isa_param_name);

}  // namespace
}  // namespace qvl::kernels
