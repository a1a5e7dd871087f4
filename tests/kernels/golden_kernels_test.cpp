// Kernels against the float64 oracle's traces in tests/data/golden (tiny checkpoint): the
// learned position-embedding interpolation and the vision rotary tables.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "io/json.h"
#include "kernel_test_util.h"
#include "kernels/kernel_table.h"
#include "kernels/pos_embed.h"
#include "kernels/rope.h"
#include "model/rope_tables.h"

namespace qvl::kernels {
namespace {

// A safetensors file read whole; tensors converted to double on request.
class Tensors {
  public:
    explicit Tensors(const std::string& path) {
        auto bytes = io::read_text_file(path);
        if (!bytes.ok()) {
            error_ = bytes.status().message();
            return;
        }
        bytes_ = std::move(bytes).value();
        std::uint64_t n = 0;
        std::memcpy(&n, bytes_.data(), 8);
        auto header = io::parse_json(std::string_view(bytes_).substr(8, n), path);
        if (!header.ok()) {
            error_ = header.status().message();
            return;
        }
        header_ = std::move(header).value();
        data_ = 8 + n;
    }
    const std::string& error() const { return error_; }

    // Values of tensor `name` (F32, BF16 or I64) and its shape; empty if absent.
    std::vector<double> get(const std::string& name, std::vector<std::int64_t>* shape) const {
        const io::JsonValue* t = header_.find(name);
        if (t == nullptr) return {};
        shape->clear();
        std::int64_t count = 1;
        for (const io::JsonValue& d : t->find("shape")->items()) {
            shape->push_back(d.as_int());
            count *= d.as_int();
        }
        const std::string& dtype = t->find("dtype")->as_string();
        const char* p = bytes_.data() + data_ + t->find("data_offsets")->items()[0].as_int();
        std::vector<double> out(count);
        for (std::int64_t i = 0; i < count; ++i) {
            if (dtype == "F32") {
                float f;
                std::memcpy(&f, p + 4 * i, 4);
                out[i] = f;
            } else if (dtype == "BF16") {
                base::bf16 b;
                std::memcpy(&b.bits, p + 2 * i, 2);
                out[i] = base::bf16_to_f32(b);
            } else {
                std::int64_t v;
                std::memcpy(&v, p + 8 * i, 8);
                out[i] = double(v);
            }
        }
        return out;
    }

  private:
    std::string bytes_;
    io::JsonValue header_;
    std::size_t data_ = 0;
    std::string error_;
};

const char* const kImageCases[] = {"img64_describe", "img90x70_resize", "img96x64_shapes"};

class GoldenPosEmbedTest : public ::testing::TestWithParam<Isa> {};

TEST_P(GoldenPosEmbedTest, MatchesOracleTrace) {
    QVL_SKIP_IF_UNSUPPORTED(GetParam());
    const std::string data = QVL_TEST_DATA_DIR;
    const Tensors model(data + "/tiny-qwen3vl/model.safetensors");
    ASSERT_EQ(model.error(), "");
    std::vector<std::int64_t> shape;
    const std::vector<double> table = model.get("model.visual.pos_embed.weight", &shape);
    ASSERT_EQ(shape.size(), 2u);
    const int side = int(std::lround(std::sqrt(double(shape[0])))), dim = int(shape[1]);
    std::vector<base::bf16> table16(table.size());
    for (std::size_t i = 0; i < table.size(); ++i) table16[i] = base::f32_to_bf16(float(table[i]));
    for (const char* name : kImageCases) {
        const Tensors golden(data + "/golden/" + name + "/golden.safetensors");
        ASSERT_EQ(golden.error(), "") << name;
        const std::vector<double> grid = golden.get("image_grid_thw", &shape);
        const std::vector<double> want = golden.get("vision.pos_embed", &shape);
        ASSERT_EQ(grid.size(), 3u) << name;
        const int gh = int(grid[1]), gw = int(grid[2]);
        ASSERT_EQ(shape[0], std::int64_t(grid[0]) * gh * gw) << name;
        std::vector<float> got(std::size_t(gh) * gw * dim);
        kernels_for(GetParam())
            .pos_embed_interpolate({.table = table16.data(),
                                    .table_type = WeightType::kBF16,
                                    .grid_side = side,
                                    .dim = dim,
                                    .gh = gh,
                                    .gw = gw,
                                    .merge = 2,
                                    .out = got.data(),
                                    .out_stride = dim});
        for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 2e-6 * std::fmax(std::fabs(want[i]), 0.1))
                << name << " grid " << gh << "x" << gw << " element " << i;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, GoldenPosEmbedTest, ::testing::ValuesIn(all_isas()),
                         testing::isa_param_name);

TEST(GoldenRopeTables, VisionTablesMatchOracleAngles) {
    const std::string data = QVL_TEST_DATA_DIR;
    for (const char* name : kImageCases) {
        const Tensors golden(data + "/golden/" + name + "/golden.safetensors");
        ASSERT_EQ(golden.error(), "") << name;
        std::vector<std::int64_t> shape;
        const std::vector<double> ids = golden.get("vision.rot_pos_ids", &shape);
        const int n = int(shape[0]);
        const std::vector<double> angles = golden.get("vision.rotary_angles", &shape);
        const int half = int(shape[1]), head_dim = 2 * half;
        std::vector<std::int32_t> rows(n), cols(n);
        for (int i = 0; i < n; ++i) rows[i] = int(ids[2 * i]), cols[i] = int(ids[2 * i + 1]);
        std::vector<float> cs(std::size_t(n) * half), sn(std::size_t(n) * half);
        model::vision_rope_tables(rows.data(), cols.data(), n, head_dim, 10000.0, cs.data(),
                                  sn.data());
        for (std::size_t i = 0; i < cs.size(); ++i) {
            // The trace stores f32 angles: 1 ulp of an angle up to ~10 rad moves cos by 1e-6.
            ASSERT_NEAR(cs[i], std::cos(angles[i]), 2e-6) << name << " element " << i;
            ASSERT_NEAR(sn[i], std::sin(angles[i]), 2e-6) << name << " element " << i;
        }
    }
}

}  // namespace
}  // namespace qvl::kernels
