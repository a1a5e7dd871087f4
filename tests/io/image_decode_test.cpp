// Decoding tests: every PNG/JPEG/WebP/GIF flavour against PIL's convert("RGB") bytes (written by
// tests/data/images/make_test_images.py and make_webp_gif_images.py), a table of bad files with
// their exact error codes, and truncation/bit-flip sweeps that must never crash (run under
// ASan/UBSan in CI).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/image.h"
#include "support/file_bytes.h"
namespace qvl::io {
namespace {

using base::ErrorCode;

const std::filesystem::path kImages = std::filesystem::path(QVL_TEST_DATA_DIR) / "images";

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
    return test::file_bytes(path);
}

std::vector<std::byte> text_bytes(std::string_view s) {
    std::vector<std::byte> out(s.size());
    std::memcpy(out.data(), s.data(), s.size());
    return out;
}

struct GoodCase {
    const char* file;
    int width;
    int height;
};

class DecodeMatchesPil : public ::testing::TestWithParam<GoodCase> {};

TEST_P(DecodeMatchesPil, BitExact) {
    const GoodCase& c = GetParam();
    auto image = load_image(kImages / c.file, ImageLimits{});
    ASSERT_TRUE(image.ok()) << image.status().message();
    EXPECT_EQ(image->width, c.width);
    EXPECT_EQ(image->height, c.height);
    std::string expected_name = c.file;
    expected_name[expected_name.rfind('.')] = '_';
    const std::vector<std::byte> expected = read_bytes(kImages / (expected_name + ".rgb"));
    ASSERT_EQ(image->rgb.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(image->rgb[i], std::uint8_t(expected[i]))
            << c.file << ": byte " << i << " (pixel " << i / 3 << ", channel " << i % 3 << ")";
    }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, DecodeMatchesPil,
    ::testing::Values(GoodCase{"rgb8.png", 37, 23}, GoodCase{"rgb8_interlaced.png", 37, 23},
                      GoodCase{"rgba8.png", 37, 23}, GoodCase{"gray8.png", 37, 23},
                      GoodCase{"gray_alpha8.png", 37, 23}, GoodCase{"gray1.png", 37, 23},
                      GoodCase{"gray2.png", 37, 23}, GoodCase{"gray4_interlaced.png", 37, 23},
                      GoodCase{"rgb16.png", 37, 23}, GoodCase{"rgba16.png", 37, 23},
                      GoodCase{"gray16.png", 37, 23}, GoodCase{"gray_alpha16.png", 37, 23},
                      GoodCase{"palette4.png", 37, 23}, GoodCase{"palette8_trns.png", 37, 23},
                      GoodCase{"rgb8_trns.png", 37, 23}, GoodCase{"rgb8_key_hit.png", 37, 23},
                      GoodCase{"gray8_key_hit.png", 37, 23}, GoodCase{"gray2_key2.png", 37, 23},
                      GoodCase{"gray4_key0.png", 37, 23}, GoodCase{"gray16_key_hit.png", 37, 23},
                      GoodCase{"tiny1x1.png", 1, 1}, GoodCase{"thin1x1000.png", 1, 1000},
                      GoodCase{"baseline420.jpg", 37, 23}, GoodCase{"baseline444.jpg", 37, 23},
                      GoodCase{"progressive.jpg", 37, 23}, GoodCase{"gray.jpg", 37, 23},
                      GoodCase{"cmyk.jpg", 37, 23}, GoodCase{"rgb_lossy.webp", 37, 23},
                      GoodCase{"rgb_lossless.webp", 37, 23}, GoodCase{"rgba_lossy.webp", 37, 23},
                      GoodCase{"rgba_lossless.webp", 37, 23}, GoodCase{"animated.webp", 37, 23},
                      GoodCase{"palette16.png", 37, 23}, GoodCase{"palette16.webp", 37, 23},
                      GoodCase{"palette16.gif", 37, 23}, GoodCase{"palette16_trns.gif", 37, 23},
                      GoodCase{"gray.gif", 37, 23}, GoodCase{"animated.gif", 37, 23},
                      GoodCase{"offset_frame.gif", 42, 27},
                      GoodCase{"offset_frame_trns.gif", 42, 27},
                      GoodCase{"past_screen.gif", 41, 26}, GoodCase{"past_palette.gif", 37, 23},
                      GoodCase{"no_palette.gif", 37, 23}, GoodCase{"local_palette.gif", 37, 23}),
    [](const auto& info) {
        std::string name = info.param.file;
        for (char& ch : name)
            if (ch == '.') ch = '_';
        return name;
    });

TEST(DecodeImage, SniffsTheFormatNotTheName) {
    const auto png = read_bytes(kImages / "rgb8.png");
    auto image = decode_image(png, ImageLimits{}, "looks_like.jpg");
    ASSERT_TRUE(image.ok()) << image.status().message();
    EXPECT_EQ(image->width, 37);
}

struct BadCase {
    std::string label;
    std::vector<std::byte> bytes;
    ImageLimits limits;
    ErrorCode code;
    std::string fragment;
};

std::vector<BadCase> bad_cases() {
    const auto png = read_bytes(kImages / "rgb8.png");
    const auto jpg = read_bytes(kImages / "baseline420.jpg");
    const auto progressive = read_bytes(kImages / "progressive.jpg");
    auto prefix = [](const std::vector<std::byte>& b, std::size_t n) {
        return std::vector<std::byte>(b.begin(), b.begin() + std::ptrdiff_t(n));
    };
    std::vector<BadCase> cases;
    cases.push_back({"empty", {}, {}, ErrorCode::kCorruptFile, "empty file (0 bytes)"});
    cases.push_back(
        {"png_signature_only", prefix(png, 5), {}, ErrorCode::kCorruptFile, "truncated png"});
    cases.push_back(
        {"png_cut_in_ihdr", prefix(png, 20), {}, ErrorCode::kCorruptFile, "truncated png"});
    cases.push_back({"png_cut_in_idat",
                     prefix(png, png.size() / 2),
                     {},
                     ErrorCode::kCorruptFile,
                     "truncated png"});
    auto bad_crc = png;
    bad_crc[png.size() / 2] ^= std::byte{0x55};  // inside IDAT: its CRC no longer matches
    cases.push_back({"png_bad_idat_crc", bad_crc, {}, ErrorCode::kCorruptFile, "crc"});
    auto bad_ihdr = png;
    bad_ihdr[29] ^= std::byte{0x01};  // the IHDR CRC itself
    cases.push_back({"png_bad_ihdr_crc", bad_ihdr, {}, ErrorCode::kCorruptFile, "crc"});
    cases.push_back({"jpeg_cut_in_header", prefix(jpg, 100), {}, ErrorCode::kCorruptFile, "jpeg"});
    cases.push_back({"jpeg_cut_in_scan",
                     prefix(jpg, jpg.size() * 3 / 4),
                     {},
                     ErrorCode::kCorruptFile,
                     "truncated jpeg"});
    cases.push_back({"progressive_jpeg_cut",
                     prefix(progressive, progressive.size() * 3 / 4),
                     {},
                     ErrorCode::kCorruptFile,
                     "truncated jpeg"});
    cases.push_back({"jpeg_without_eoi",
                     prefix(jpg, jpg.size() - 2),
                     {},
                     ErrorCode::kCorruptFile,
                     "truncated jpeg"});
    cases.push_back({"jpeg_soi_only", prefix(jpg, 3), {}, ErrorCode::kCorruptFile, "jpeg"});
    cases.push_back({"text",
                     text_bytes("hello, this is not an image\n"),
                     {},
                     ErrorCode::kUnsupported,
                     "not a jpeg, png, webp or gif image"});
    cases.push_back({"gif_screen_only",
                     text_bytes("GIF89a\x01\x00\x01\x00"),
                     {},
                     ErrorCode::kCorruptFile,
                     "gif"});
    cases.push_back({"bmp",
                     text_bytes("BM\x10\x00\x00\x00"),
                     {},
                     ErrorCode::kUnsupported,
                     "bmp images are not supported (only jpeg, png, webp and gif)"});
    const auto webp = read_bytes(kImages / "rgba_lossy.webp");
    const auto gif = read_bytes(kImages / "palette16.gif");
    cases.push_back(
        {"webp_cut", prefix(webp, webp.size() / 2), {}, ErrorCode::kCorruptFile, "truncated webp"});
    cases.push_back({"webp_riff_only", prefix(webp, 12), {}, ErrorCode::kCorruptFile, "webp"});
    cases.push_back(
        {"gif_cut", prefix(gif, gif.size() - 40), {}, ErrorCode::kCorruptFile, "truncated gif"});
    cases.push_back(
        {"gif_cut_in_palette", prefix(gif, 40), {}, ErrorCode::kCorruptFile, "truncated gif"});
    auto no_image = prefix(read_bytes(kImages / "no_palette.gif"), 13);  // no global palette
    no_image.push_back(std::byte{';'});
    cases.push_back({"gif_without_image", no_image, {}, ErrorCode::kCorruptFile, "no image"});
    cases.push_back({"webp_over_custom_pixel_limit", webp, ImageLimits{.max_pixels = 850},
                     ErrorCode::kOutOfRange, "webp image of 37x23 = 851 pixels exceeds"});
    cases.push_back({"gif_over_custom_pixel_limit", gif, ImageLimits{.max_pixels = 850},
                     ErrorCode::kOutOfRange, "gif image of 37x23 = 851 pixels exceeds"});
    auto huge_webp = read_bytes(kImages / "animated.webp");
    for (std::size_t k : {24, 27}) {  // 40000 - 1, 24-bit little-endian (libwebp's own cap: 2^32)
        huge_webp[k] = std::byte{0x3f};
        huge_webp[k + 1] = std::byte{0x9c};
        huge_webp[k + 2] = std::byte{0};
    }
    cases.push_back(
        {"webp_canvas_40000_squared", huge_webp, {}, ErrorCode::kOutOfRange, "40000x40000"});
    auto huge_gif = gif;
    for (std::size_t k = 6; k < 10; ++k) huge_gif[k] = std::byte{0xff};
    cases.push_back(
        {"gif_screen_65535_squared", huge_gif, {}, ErrorCode::kOutOfRange, "65535x65535"});
    cases.push_back({"png_header_claims_100000x100000",
                     read_bytes(kImages / "huge_dims.png"),
                     {},
                     ErrorCode::kOutOfRange,
                     "100000x100000 = 10000000000 pixels exceeds the limit of 268435456 pixels"});
    cases.push_back({"jpeg_header_claims_60000x60000",
                     read_bytes(kImages / "huge_dims.jpg"),
                     {},
                     ErrorCode::kOutOfRange,
                     "60000x60000"});
    cases.push_back({"png_over_custom_pixel_limit", png, ImageLimits{.max_pixels = 850},
                     ErrorCode::kOutOfRange, "37x23 = 851 pixels exceeds the limit of 850"});
    cases.push_back({"jpeg_over_custom_pixel_limit", jpg, ImageLimits{.max_pixels = 850},
                     ErrorCode::kOutOfRange, "limit of 850 pixels"});
    cases.push_back({"over_file_limit", png, ImageLimits{.max_file_bytes = 100},
                     ErrorCode::kOutOfRange, "exceeds the image file limit of 100 bytes"});
    return cases;
}

TEST(DecodeImage, BadInputsFailWithTheirCode) {
    for (const BadCase& c : bad_cases()) {
        auto image = decode_image(c.bytes, c.limits, "bad/" + c.label);
        ASSERT_FALSE(image.ok()) << c.label;
        EXPECT_EQ(image.status().code(), c.code)
            << c.label << ": " << base::error_code_name(image.status().code()) << ": "
            << image.status().message();
        EXPECT_NE(image.status().message().find(c.fragment), std::string::npos)
            << c.label << ": '" << image.status().message() << "' lacks '" << c.fragment << "'";
        EXPECT_EQ(image.status().message().rfind("bad/" + c.label + ": ", 0), 0u)
            << image.status().message();
    }
}

TEST(DecodeImage, TinyAndThinImagesDecode) {
    auto tiny = load_image(kImages / "tiny1x1.png", ImageLimits{});
    ASSERT_TRUE(tiny.ok()) << tiny.status().message();
    EXPECT_EQ(tiny->rgb, (std::vector<std::uint8_t>{200, 100, 50}));
    auto thin = load_image(kImages / "thin1x1000.png", ImageLimits{});
    ASSERT_TRUE(thin.ok()) << thin.status().message();
    EXPECT_EQ(thin->width, 1);
    EXPECT_EQ(thin->height, 1000);
}

// One Image reused for every format, sizes growing and shrinking (37x23, 1x1, 1x1000), in both
// orders, with failures in between: each decode_image_into gives exactly the pixels of a fresh
// decode, and a failure leaves the image empty.
TEST(DecodeImageInto, ReusedImageMatchesFreshDecodes) {
    std::vector<std::string> files = {
        "tiny1x1.png",     "rgb8.png",          "thin1x1000.png",
        "cmyk.jpg",        "gray16.png",        "baseline420.jpg",
        "tiny1x1.png",     "progressive.jpg",   "gray4_interlaced.png",
        "baseline444.jpg", "palette8_trns.png", "rgba8.png",
        "rgba_lossy.webp", "offset_frame.gif",  "rgb_lossless.webp",
        "no_palette.gif",  "rgb8.png"};
    for (bool reverse : {false, true}) {
        if (reverse) std::reverse(files.begin(), files.end());
        Image reused;
        for (const std::string& file : files) {
            SCOPED_TRACE(file);
            const auto bytes = read_bytes(kImages / file);
            auto fresh = decode_image(bytes, ImageLimits{}, file);
            ASSERT_TRUE(fresh.ok()) << fresh.status().message();
            ASSERT_TRUE(decode_image_into(bytes, ImageLimits{}, file, &reused).ok());
            EXPECT_EQ(reused.width, fresh->width);
            EXPECT_EQ(reused.height, fresh->height);
            EXPECT_EQ(reused.rgb, fresh->rgb);

            // A failure (truncated data) after a success leaves the image empty, and a success
            // after it is complete again.
            const std::vector<std::byte> cut(bytes.begin(), bytes.begin() + bytes.size() / 2);
            const base::Status failed = decode_image_into(cut, ImageLimits{}, "cut", &reused);
            ASSERT_FALSE(failed.ok());
            EXPECT_EQ(failed.code(), ErrorCode::kCorruptFile) << failed.message();
            EXPECT_EQ(reused.width, 0);
            EXPECT_EQ(reused.height, 0);
            EXPECT_TRUE(reused.rgb.empty());
            ASSERT_TRUE(load_image_into(kImages / file, ImageLimits{}, &reused).ok());
            EXPECT_EQ(reused.rgb, fresh->rgb);
        }
    }
    Image missing{5, 5, std::vector<std::uint8_t>(75, 1)};
    const base::Status status = load_image_into(kImages / "no_such_image.png", {}, &missing);
    EXPECT_EQ(status.code(), ErrorCode::kNotFound);
    EXPECT_EQ(missing.width, 0);
    EXPECT_TRUE(missing.rgb.empty());
}

// Complete pixel data without the trailing IEND chunk is accepted, as PIL accepts it (a JPEG
// without its EOI marker is refused, as PIL refuses it: see bad_cases).
TEST(DecodeImage, PngWithoutIendIsAccepted) {
    const auto png = read_bytes(kImages / "rgb8.png");
    auto image =
        decode_image(std::vector<std::byte>(png.begin(), png.end() - 12), ImageLimits{}, "cut");
    ASSERT_TRUE(image.ok()) << image.status().message();
    EXPECT_EQ(image->width, 37);
}

TEST(LoadImage, MissingFileIsNotFound) {
    auto image = load_image(kImages / "no_such_image.png", ImageLimits{});
    ASSERT_FALSE(image.ok());
    EXPECT_EQ(image.status().code(), ErrorCode::kNotFound);
    EXPECT_NE(image.status().message().find("no_such_image.png"), std::string::npos);
}

TEST(LoadImage, FileLimitCheckedBeforeReading) {
    auto image = load_image(kImages / "rgb8.png", ImageLimits{.max_file_bytes = 10});
    ASSERT_FALSE(image.ok());
    EXPECT_EQ(image.status().code(), ErrorCode::kOutOfRange);
}

// Every prefix and a spread of single-byte corruptions of each format: the decoder returns
// (an image or an error from the documented set), never crashes or reads out of bounds.
TEST(DecodeImage, TruncationsAndBitFlipsNeverCrash) {
    for (const char* file :
         {"rgb8.png", "rgb8_interlaced.png", "palette4.png", "gray16.png", "baseline420.jpg",
          "progressive.jpg", "gray.jpg", "cmyk.jpg", "rgb_lossy.webp", "rgba_lossless.webp",
          "animated.webp", "palette16.gif", "animated.gif", "offset_frame_trns.gif"}) {
        const auto bytes = read_bytes(kImages / file);
        auto check = [&](const std::vector<std::byte>& b, const std::string& what) {
            auto image = decode_image(b, ImageLimits{}, what);
            if (image.ok()) {
                EXPECT_EQ(image->rgb.size(), std::size_t(image->width) * image->height * 3);
                return;
            }
            const ErrorCode code = image.status().code();
            EXPECT_TRUE(code == ErrorCode::kCorruptFile || code == ErrorCode::kUnsupported ||
                        code == ErrorCode::kOutOfRange)
                << what << ": " << image.status().message();
        };
        for (std::size_t n = 0; n < bytes.size(); n += 1 + n / 16)
            check(std::vector<std::byte>(bytes.begin(), bytes.begin() + std::ptrdiff_t(n)),
                  fmt::format("{} cut at {}", file, n));
        std::uint32_t state = 12345;
        for (int trial = 0; trial < 200; ++trial) {
            state = state * 1664525u + 1013904223u;
            auto flipped = bytes;
            const std::size_t at = (state >> 8) % bytes.size();
            flipped[at] ^= std::byte(1u << (state & 7));
            check(flipped, fmt::format("{} bit flip at {}", file, at));
        }
    }
}

// Values PIL's Image.alpha_composite onto white gives (check_alpha_composite.py verifies the
// formula for all pairs; the .rgb fixtures of the alpha PNGs check it through the decoder).
TEST(CompositeOnWhite, MatchesPilValuesInPlace) {
    const std::uint8_t pairs[][2] = {{0, 128}, {100, 1}, {200, 254}, {7, 77},
                                     {255, 3}, {0, 255}, {123, 0}};
    const std::uint8_t pil[] = {127, 254, 200, 180, 255, 0, 255};
    std::vector<std::uint8_t> px;
    for (const auto& [c, a] : pairs) px.insert(px.end(), {c, std::uint8_t(255 - c), c, a});
    composite_on_white(px, std::size(pairs));
    for (std::size_t i = 0; i < std::size(pairs); ++i) {
        EXPECT_EQ(px[3 * i], pil[i]) << i;
        EXPECT_EQ(px[3 * i + 2], pil[i]) << i;
        const unsigned c = 255 - pairs[i][0], a = pairs[i][1];
        EXPECT_EQ(px[3 * i + 1], (c * a + 255 * (255 - a) + 127) / 255) << i;
    }
    // Opaque pixels are unchanged, fully transparent ones white, for every value.
    std::vector<std::uint8_t> all;
    for (int v = 0; v < 256; ++v) all.insert(all.end(), {std::uint8_t(v), 0, 255, 255});
    for (int v = 0; v < 256; ++v) all.insert(all.end(), {std::uint8_t(v), 0, 255, 0});
    composite_on_white(all, 512);
    for (int v = 0; v < 256; ++v) {
        EXPECT_EQ(all[3 * v], v);
        EXPECT_EQ(all[3 * (256 + v)], 255);
        EXPECT_EQ(all[3 * (256 + v) + 1], 255);
    }
}

}  // namespace
}  // namespace qvl::io
