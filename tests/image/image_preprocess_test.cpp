// Preprocessing tests: smart_resize against the spec table, the normalisation LUT, the resize
// weights' invariants, and bit-exact pixel_values against the float64 oracle: the golden cases
// (tests/data/golden) and synthetic resize cases (tests/data/resize, make_resize_cases.py).
#include "image/image_preprocess.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "image/image_resize.h"
#include "io/image.h"
#include "io/json.h"

namespace qvl::image {
namespace {

using base::ErrorCode;

const std::filesystem::path kData(QVL_TEST_DATA_DIR);

// --- smart_resize -----------------------------------------------------------------------------

struct SizeCase {
    int width, height, out_width, out_height;
};

TEST(SmartResize, SpecTable) {
    // qwen3vl-spec.md section 3.2 (factor 32, min 65536, max 16777216).
    const SizeCase cases[] = {{448, 448, 448, 448},   {1280, 720, 1280, 704},
                              {720, 1280, 704, 1280}, {1920, 1080, 1920, 1088},
                              {640, 480, 640, 480},   {800, 600, 800, 608},
                              {336, 336, 320, 320},   {224, 224, 256, 256},
                              {100, 100, 256, 256},   {4000, 3000, 4000, 3008}};
    for (const SizeCase& c : cases) {
        auto r = smart_resize(c.height, c.width, 32, 65536, 16777216);
        ASSERT_TRUE(r.ok()) << r.status().message();
        EXPECT_EQ(r->first, c.out_height) << c.width << "x" << c.height;
        EXPECT_EQ(r->second, c.out_width) << c.width << "x" << c.height;
    }
}

TEST(SmartResize, RoundsHalfToEven) {
    // 80/32 = 2.5 -> 2, 112/32 = 3.5 -> 4, 144/32 = 4.5 -> 4 (C round() would give 3, 4, 5).
    auto r = smart_resize(80, 112, 32, 1, std::int64_t(1) << 40);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, (std::pair<int, int>{64, 128}));
    r = smart_resize(144, 144, 32, 1, std::int64_t(1) << 40);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, (std::pair<int, int>{128, 128}));
}

TEST(SmartResize, ClampsToMinAndMaxPixels) {
    auto big = smart_resize(20000, 20000, 32, 65536, 16777216);
    ASSERT_TRUE(big.ok());
    EXPECT_EQ(*big, (std::pair<int, int>{4096, 4096}));
    // Thin and over max_pixels: the short side would floor to 0 and keeps one factor.
    auto thin = smart_resize(20, 3000, 32, 1024, 50000);
    ASSERT_TRUE(thin.ok());
    EXPECT_EQ(*thin, (std::pair<int, int>{32, 2720}));
    auto tiny = smart_resize(1, 1, 32, 65536, 16777216);
    ASSERT_TRUE(tiny.ok()) << tiny.status().message();
    EXPECT_EQ(*tiny, (std::pair<int, int>{256, 256}));
    auto wide = smart_resize(10, 1000, 32, 65536, 16777216);
    ASSERT_TRUE(wide.ok());
    EXPECT_EQ(*wide, (std::pair<int, int>{32, 2560}));
}

TEST(SmartResize, RefusesExtremeAspectRatiosAndBadSizes) {
    EXPECT_TRUE(smart_resize(1, 200, 32, 65536, 16777216).ok());
    for (auto [h, w] : {std::pair{1, 201}, std::pair{1000, 1}, std::pair{3, 1000}}) {
        auto r = smart_resize(h, w, 32, 65536, 16777216);
        ASSERT_FALSE(r.ok()) << h << "x" << w;
        EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
        EXPECT_NE(r.status().message().find("over the limit of 200"), std::string::npos)
            << r.status().message();
    }
    auto zero = smart_resize(0, 10, 32, 65536, 16777216);
    EXPECT_EQ(zero.status().code(), ErrorCode::kInvalidArgument);
    // With min_pixels 0 a side rounds to 0: refused, not returned.
    auto small = smart_resize(10, 10, 32, 0, 16777216);
    ASSERT_FALSE(small.ok());
    EXPECT_NE(small.status().message().find("not a positive multiple of 32"), std::string::npos);
}

// --- normalisation ----------------------------------------------------------------------------

TEST(NormalizationLut, MatchesSpecAndOracleFormula) {
    float lut[3][256];
    normalization_lut(PreprocessConfig{}, lut);
    // Spec section 3.3 examples are the values after the model's cast to bf16.
    EXPECT_EQ(lut[0][0], -1.0f);
    EXPECT_EQ(base::round_to_bf16(lut[1][1]), -0.9921875f);
    EXPECT_EQ(base::round_to_bf16(lut[2][128]), 0.003936767578125f);
    EXPECT_EQ(base::round_to_bf16(lut[0][127]), -0.003936767578125f);
    EXPECT_EQ(lut[0][255], 1.0f);
    EXPECT_EQ(lut[0][1], (1.0f - 127.5f) / 127.5f);
    for (int c = 0; c < 3; ++c) {
        for (int x = 0; x < 256; ++x) {
            // The oracle's (x/255 - 0.5)/0.5 in double, rounded once; equal for mean=std=0.5.
            const float oracle = static_cast<float>((x / 255.0 - 0.5) / 0.5);
            ASSERT_EQ(lut[c][x], oracle) << "channel " << c << " value " << x;
        }
    }
    PreprocessConfig clip;
    clip.image_mean[0] = 0.48145466f;
    clip.image_std[0] = 0.26862954f;
    normalization_lut(clip, lut);
    const float mean = float(double(0.48145466f) * 255.0), sd = float(double(0.26862954f) * 255.0);
    EXPECT_EQ(lut[0][200], (200.0f - mean) / sd);
}

// --- resize weights ---------------------------------------------------------------------------

TEST(BicubicWeights, WindowsInsideInputAndNormalised) {
    for (auto [in, out] :
         {std::pair{1, 256}, std::pair{10, 32}, std::pair{100, 320}, std::pair{720, 704},
          std::pair{1999, 256}, std::pair{7, 3}, std::pair{1000, 2560}, std::pair{17, 1}}) {
        const detail::AxisWeights w = detail::bicubic_aa_weights(in, out);
        ASSERT_LE(w.taps, in);
        ASSERT_GE(w.precision, 1);
        for (int i = 0; i < out; ++i) {
            ASSERT_GE(w.start[i], 0);
            ASSERT_LE(w.start[i] + w.taps, in);
            int sum = 0;
            for (int k = 0; k < w.taps; ++k) sum += w.w[std::size_t(i) * w.taps + k];
            // Each weight rounds by at most 1/2 ulp of 2^-p.
            EXPECT_NEAR(sum, 1 << w.precision, w.taps) << in << "->" << out << " at " << i;
        }
    }
}

TEST(ResizeBicubicAa, SameSizeIsACopy) {
    io::Image img{3, 2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}};
    const io::Image out = resize_bicubic_aa(img, 2, 3);
    EXPECT_EQ(out.rgb, img.rgb);
}

TEST(ResizeBicubicAa, ConstantImageStaysConstant) {
    io::Image img{13, 9, std::vector<std::uint8_t>(13 * 9 * 3, 77)};
    for (auto [h, w] : {std::pair{32, 64}, std::pair{3, 5}, std::pair{9, 40}, std::pair{50, 13}}) {
        const io::Image out = resize_bicubic_aa(img, h, w);
        ASSERT_EQ(out.rgb.size(), std::size_t(h) * w * 3);
        for (std::uint8_t v : out.rgb) ASSERT_EQ(v, 77) << h << "x" << w;
    }
}

// --- oracle goldens ---------------------------------------------------------------------------

// The named tensor of a safetensors file, raw bytes (test-local reader; trusted input).
std::vector<std::uint8_t> read_tensor(const std::filesystem::path& path, const std::string& name,
                                      std::vector<std::int64_t>* shape) {
    auto text = io::read_text_file(path);
    EXPECT_TRUE(text.ok()) << text.status().message();
    const std::string& s = text.value();
    std::uint64_t header_len = 0;
    std::memcpy(&header_len, s.data(), 8);
    auto header = io::parse_json(std::string_view(s).substr(8, header_len), path.string());
    EXPECT_TRUE(header.ok()) << header.status().message();
    const io::JsonValue* t = header->find(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return {};
    shape->clear();
    for (const auto& d : t->find("shape")->items()) shape->push_back(d.as_int());
    const auto& off = t->find("data_offsets")->items();
    const std::size_t begin = 8 + header_len + std::size_t(off[0].as_int());
    const std::size_t end = 8 + header_len + std::size_t(off[1].as_int());
    return std::vector<std::uint8_t>(s.begin() + std::ptrdiff_t(begin),
                                     s.begin() + std::ptrdiff_t(end));
}

std::filesystem::path first_image_of_case(const std::filesystem::path& case_dir) {
    auto c = io::read_json_file(case_dir / "case.json");
    EXPECT_TRUE(c.ok());
    for (const auto& m : c->find("messages")->items()) {
        const io::JsonValue* content = m.find("content");
        if (content == nullptr || !content->is_array()) continue;
        for (const auto& item : content->items())
            if (const io::JsonValue* img = item.find("image")) return case_dir / img->as_string();
    }
    return {};
}

class GoldenPixelValues : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenPixelValues, BitExact) {
    const std::filesystem::path dir = kData / "golden" / GetParam();
    auto config = load_preprocess_config(kData / "tiny-qwen3vl" / "preprocessor_config.json");
    ASSERT_TRUE(config.ok()) << config.status().message();
    auto image = io::load_image(first_image_of_case(dir), io::ImageLimits{});
    ASSERT_TRUE(image.ok()) << image.status().message();
    auto pre = preprocess_image(image.value(), config.value());
    ASSERT_TRUE(pre.ok()) << pre.status().message();

    std::vector<std::int64_t> shape;
    const auto resized = read_tensor(dir / "golden.safetensors", "preproc.resized_image.0", &shape);
    ASSERT_EQ(shape, (std::vector<std::int64_t>{pre->resized_height, pre->resized_width, 3}));
    for (std::size_t i = 0; i < pre->resized.rgb.size(); ++i) {
        std::int32_t v;
        std::memcpy(&v, &resized[4 * i], 4);
        ASSERT_EQ(pre->resized.rgb[i], v) << "resized byte " << i;
    }
    const auto pixels = read_tensor(dir / "golden.safetensors", "pixel_values", &shape);
    ASSERT_EQ(shape, (std::vector<std::int64_t>{std::int64_t(pre->grid_h) * pre->grid_w, 1536}));
    ASSERT_EQ(pre->pixel_values.size() * 4, pixels.size());
    for (std::size_t i = 0; i < pre->pixel_values.size(); ++i) {
        std::uint32_t want, got;
        std::memcpy(&want, &pixels[4 * i], 4);
        std::memcpy(&got, &pre->pixel_values[i], 4);
        ASSERT_EQ(got, want) << "pixel_values element " << i << " (row " << i / 1536 << ")";
    }
    EXPECT_EQ(pre->num_image_tokens(), pre->grid_h * pre->grid_w / 4);
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenPixelValues,
                         ::testing::Values("img64_describe", "img90x70_resize", "img96x64_shapes"));

// make_resize_cases.py synthetic_image, integer for integer.
std::uint32_t lowbias32(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

io::Image synthetic_image(int w, int h, std::uint64_t seed) {
    io::Image img{w, h, std::vector<std::uint8_t>(std::size_t(w) * h * 3)};
    for (std::uint64_t y = 0; y < std::uint64_t(h); ++y) {
        for (std::uint64_t x = 0; x < std::uint64_t(w); ++x) {
            for (std::uint64_t c = 0; c < 3; ++c) {
                const auto hsh =
                    lowbias32(std::uint32_t((y * w + x) * 3 + c + seed * 0x9E3779B9ull));
                const std::uint64_t region = (x / 17 + y / 13) % 5;
                const std::uint64_t edge = ((x / 29 + y / 7 + c) % 2) * 255;
                const std::uint64_t grad =
                    (x * 255 / std::uint64_t(std::max(w - 1, 1)) + y * 3 + c * 60) % 256;
                const std::uint64_t v = region == 0 ? (hsh & 255) : region == 1 ? edge : grad;
                img.rgb[(y * w + x) * 3 + c] = std::uint8_t(v);
            }
        }
    }
    return img;
}

std::string crc32_hex(const void* data, std::size_t n) {
    static const auto table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    std::uint32_t crc = 0xFFFFFFFFu;
    const auto* p = static_cast<const std::uint8_t*>(data);
    for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return fmt::format("{:08x}", crc ^ 0xFFFFFFFFu);
}

TEST(ResizeCases, MatchOracle) {
    const std::filesystem::path dir = kData / "resize";
    auto cases = io::read_json_file(dir / "cases.json");
    ASSERT_TRUE(cases.ok()) << cases.status().message();
    ASSERT_GE(cases->items().size(), 8u);
    for (const io::JsonValue& c : cases->items()) {
        const std::string name = c.find("name")->as_string();
        SCOPED_TRACE(name);
        const io::Image img =
            synthetic_image(int(c.find("width")->as_int()), int(c.find("height")->as_int()),
                            std::uint64_t(c.find("seed")->as_int()));
        ASSERT_EQ(crc32_hex(img.rgb.data(), img.rgb.size()), c.find("input_crc32")->as_string());
        PreprocessConfig config;
        config.min_pixels = c.find("min_pixels")->as_int();
        config.max_pixels = c.find("max_pixels")->as_int();
        auto pre = preprocess_image(img, config);
        ASSERT_TRUE(pre.ok()) << pre.status().message();
        ASSERT_EQ(pre->resized_width, c.find("resized_width")->as_int());
        ASSERT_EQ(pre->resized_height, c.find("resized_height")->as_int());
        ASSERT_EQ(pre->grid_h, c.find("grid")->items()[1].as_int());
        ASSERT_EQ(pre->grid_w, c.find("grid")->items()[2].as_int());
        if (const io::JsonValue* file = c.find("resized_file")) {
            std::ifstream f(dir / file->as_string(), std::ios::binary);
            std::vector<char> want((std::istreambuf_iterator<char>(f)),
                                   std::istreambuf_iterator<char>());
            ASSERT_EQ(want.size(), pre->resized.rgb.size());
            for (std::size_t i = 0; i < want.size(); ++i) {
                ASSERT_EQ(pre->resized.rgb[i], std::uint8_t(want[i]))
                    << "pixel (" << i / 3 % pre->resized_width << ", " << i / 3 / pre->resized_width
                    << ") channel " << i % 3;
            }
        }
        EXPECT_EQ(crc32_hex(pre->resized.rgb.data(), pre->resized.rgb.size()),
                  c.find("resized_crc32")->as_string());
        EXPECT_EQ(crc32_hex(pre->pixel_values.data(), pre->pixel_values.size() * 4),
                  c.find("pixel_values_crc32")->as_string());
    }
}

// --- whole pipeline edge cases and config -----------------------------------------------------

TEST(PreprocessImage, ThinImageRefused) {
    auto thin = io::load_image(kData / "images" / "thin1x1000.png", io::ImageLimits{});
    ASSERT_TRUE(thin.ok());
    auto pre = preprocess_image(thin.value(), PreprocessConfig{});
    ASSERT_FALSE(pre.ok());
    EXPECT_EQ(pre.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(pre.status().message().find("1x1000"), std::string::npos) << pre.status().message();
}

TEST(PreprocessImage, OnePixelImageUpscalesToMinPixels) {
    auto tiny = io::load_image(kData / "images" / "tiny1x1.png", io::ImageLimits{});
    ASSERT_TRUE(tiny.ok());
    auto pre = preprocess_image(tiny.value(), PreprocessConfig{});
    ASSERT_TRUE(pre.ok()) << pre.status().message();
    EXPECT_EQ(pre->resized_height, 256);
    EXPECT_EQ(pre->num_image_tokens(), 64);
    float lut[3][256];
    normalization_lut(PreprocessConfig{}, lut);
    EXPECT_EQ(pre->pixel_values[0], lut[0][200]);
    EXPECT_EQ(pre->pixel_values[1535], lut[2][50]);
}

TEST(PreprocessImage, MergeSizeOneAndTemporalThree) {
    PreprocessConfig config;
    config.merge_size = 1;
    config.temporal_patch_size = 3;
    config.patch_size = 4;
    config.min_pixels = 1;
    const io::Image img = synthetic_image(8, 4, 1);
    auto pre = preprocess_image(img, config);
    ASSERT_TRUE(pre.ok()) << pre.status().message();
    ASSERT_EQ(pre->grid_h, 1);
    ASSERT_EQ(pre->grid_w, 2);
    EXPECT_EQ(pre->num_image_tokens(), 2);
    float lut[3][256];
    normalization_lut(config, lut);
    const std::size_t row = 3 * 3 * 16;
    ASSERT_EQ(pre->pixel_values.size(), 2 * row);
    // Patch 1, channel 2, frame copy 2, y 3, x 1 <- pixel (x 5, y 3).
    EXPECT_EQ(pre->pixel_values[row + ((2 * 3 + 2) * 4 + 3) * 4 + 1],
              lut[2][img.rgb[(3 * 8 + 5) * 3 + 2]]);
}

// One PreprocessedImage reused across images of different sizes, in both orders (so each size
// follows both a larger and a smaller one: reused storage is overwritten in place or grown),
// with pixel_values off for one call and a refused image in between: every result is
// bit-identical to a fresh preprocess_image, and a failure leaves the output empty.
TEST(PreprocessImageInto, ReusedOutputMatchesFreshCalls) {
    struct Step {
        int width, height;
        std::int64_t min_pixels;
        bool pixel_values;
    };
    std::vector<Step> steps = {
        {300, 200, 65536, true},  // both axes change (upscale)
        {96, 64, 1, true},        // unchanged size: a plain copy
        {640, 97, 1, true},       // height only
        {1000, 251, 1, true},     // both axes change (downscale), larger than all before
        {1000, 251, 1, false},    // the same without pixel_values
        {90, 70, 65536, true},    // small, upscaled
        {1, 300, 1, true},        // aspect ratio 300: refused
        {200, 512, 1, true},      // width only
    };
    for (bool reverse : {false, true}) {
        if (reverse) std::reverse(steps.begin(), steps.end());
        PreprocessedImage reused;
        for (const Step& step : steps) {
            SCOPED_TRACE(
                fmt::format("{}x{} pixel_values {}", step.width, step.height, step.pixel_values));
            const io::Image img = synthetic_image(step.width, step.height, step.width);
            PreprocessConfig config;
            config.min_pixels = step.min_pixels;
            config.pixel_values = step.pixel_values;
            auto fresh = preprocess_image(img, config);
            const base::Status status = preprocess_image_into(img, config, &reused);
            ASSERT_EQ(status.ok(), fresh.ok()) << status.message();
            if (!fresh.ok()) {
                EXPECT_EQ(status.message(), fresh.status().message());
                EXPECT_EQ(reused.grid_h, 0);
                EXPECT_TRUE(reused.resized.rgb.empty());
                EXPECT_TRUE(reused.pixel_values.empty());
                continue;
            }
            EXPECT_EQ(reused.resized_width, fresh->resized_width);
            EXPECT_EQ(reused.resized_height, fresh->resized_height);
            EXPECT_EQ(reused.grid_h, fresh->grid_h);
            EXPECT_EQ(reused.grid_w, fresh->grid_w);
            EXPECT_EQ(reused.resized.width, fresh->resized.width);
            EXPECT_EQ(reused.resized.height, fresh->resized.height);
            EXPECT_EQ(reused.resized.rgb, fresh->resized.rgb);
            ASSERT_EQ(reused.pixel_values.size(), fresh->pixel_values.size());
            EXPECT_EQ(crc32_hex(reused.pixel_values.data(), reused.pixel_values.size() * 4),
                      crc32_hex(fresh->pixel_values.data(), fresh->pixel_values.size() * 4));
        }
    }
}

class ConfigFile : public ::testing::Test {
  protected:
    std::filesystem::path write(const std::string& text) {
        const auto path = std::filesystem::path(::testing::TempDir()) /
                          fmt::format("qvl_pp_{}_{}.json", ::getpid(), counter_++);
        std::ofstream(path) << text;
        paths_.push_back(path);
        return path;
    }
    ~ConfigFile() override {
        for (const auto& p : paths_) std::filesystem::remove(p);
    }

  private:
    int counter_ = 0;
    std::vector<std::filesystem::path> paths_;
};

TEST_F(ConfigFile, TinyCheckpointAndDefaults) {
    auto tiny = load_preprocess_config(kData / "tiny-qwen3vl" / "preprocessor_config.json");
    ASSERT_TRUE(tiny.ok()) << tiny.status().message();
    EXPECT_EQ(tiny->min_pixels, 4096);
    EXPECT_EQ(tiny->max_pixels, 16777216);
    EXPECT_EQ(tiny->patch_size, 16);
    auto missing = load_preprocess_config(kData / "no_such_preprocessor_config.json");
    ASSERT_TRUE(missing.ok());
    EXPECT_EQ(missing->min_pixels, 65536);
    EXPECT_EQ(missing->image_std[2], 0.5f);
    auto top = load_preprocess_config(
        write(R"({"size": {"shortest_edge": 4096, "longest_edge": 8192}, "min_pixels": 1024,
                  "image_mean": 0.25, "merge_size": 1})"));
    ASSERT_TRUE(top.ok()) << top.status().message();
    EXPECT_EQ(top->min_pixels, 1024);
    EXPECT_EQ(top->max_pixels, 8192);
    EXPECT_EQ(top->image_mean[1], 0.25f);
    EXPECT_EQ(top->merge_size, 1);
}

TEST_F(ConfigFile, BadValuesNameFileAndKey) {
    struct Bad {
        const char* json;
        const char* key;
        ErrorCode code;
    };
    const Bad bad[] = {
        {R"({"patch_size": 0})", "'patch_size'", ErrorCode::kInvalidArgument},
        {R"({"patch_size": 16.5})", "'patch_size'", ErrorCode::kInvalidArgument},
        {R"({"merge_size": "2"})", "'merge_size'", ErrorCode::kInvalidArgument},
        {R"({"size": {"shortest_edge": -5}})", "'shortest_edge'", ErrorCode::kInvalidArgument},
        {R"({"size": [1, 2]})", "'size'", ErrorCode::kInvalidArgument},
        {R"({"min_pixels": 100, "max_pixels": 50})", "max_pixels 50", ErrorCode::kInvalidArgument},
        {R"({"image_std": [0.5, 0, 0.5]})", "'image_std'", ErrorCode::kInvalidArgument},
        // Non-zero as a double, zero as a float: found by the preprocessor_config fuzzer.
        {R"({"image_std": [0.5, 1e-300, 0.5]})", "'image_std'", ErrorCode::kInvalidArgument},
        {R"({"image_mean": [0.5, 0.5]})", "'image_mean'", ErrorCode::kInvalidArgument},
        {R"({"do_normalize": false})", "'do_normalize'", ErrorCode::kUnsupported},
        {R"({"rescale_factor": 0.5})", "'rescale_factor'", ErrorCode::kUnsupported},
        {R"([1, 2])", "expected a json object", ErrorCode::kInvalidArgument},
    };
    for (const Bad& b : bad) {
        const auto path = write(b.json);
        auto r = load_preprocess_config(path);
        ASSERT_FALSE(r.ok()) << b.json;
        EXPECT_EQ(r.status().code(), b.code) << b.json << ": " << r.status().message();
        EXPECT_NE(r.status().message().find(path.string()), std::string::npos)
            << r.status().message();
        EXPECT_NE(r.status().message().find(b.key), std::string::npos) << r.status().message();
    }
    auto broken = load_preprocess_config(write("{not json"));
    EXPECT_EQ(broken.status().code(), ErrorCode::kCorruptFile);
}

}  // namespace
}  // namespace qvl::image
