// qvl-run on broken images: missing, empty, not an image, truncated, corrupt, headers over the
// pixel limit (exit 4 for every format: JPEG, PNG, WebP, GIF), degenerate sizes (tools in
// bad_input_support.h).
#include <gtest/gtest.h>

#include "bad_input_support.h"

namespace qvl::bad_input {
namespace {

// ---- images ------------------------------------------------------------------------------------

TEST_F(BadInput, ImageMissing) {
    const fs::path missing = scratch_.path() / "no-such-image.png";
    expect_refused(run_qvl(args(kTiny, {"-i", missing.string()})), kInput, "no-such-image.png");
}

TEST_F(BadInput, ImageEmpty) {
    expect_refused(run_qvl(args(kTiny, {"-i", image("empty.png", "").string()})), kInput,
                   "empty.png");
}

TEST_F(BadInput, ImageNotAnImage) {
    expect_refused(run_qvl(args(kTiny, {"-i", image("notes.jpg", "just some text\n").string()})),
                   kInput, "notes.jpg");
}

TEST_F(BadInput, ImageIsADirectory) {
    expect_refused(run_qvl(args(kTiny, {"-i", scratch_.path().string()})), kInput,
                   scratch_.path().filename().string());
}

TEST_F(BadInput, ImageTruncatedPng) {
    const std::string png = read_file(kPng);
    expect_refused(
        run_qvl(args(kTiny, {"-i", image("cut.png", png.substr(0, png.size() / 2)).string()})),
        kInput, "cut.png");
    expect_refused(run_qvl(args(kTiny, {"-i", image("sig.png", png.substr(0, 8)).string()})),
                   kInput, "sig.png");
}

TEST_F(BadInput, ImageTruncatedJpeg) {
    const std::string jpg = read_file(kJpeg);
    ASSERT_GT(jpg.size(), 1000u);
    expect_refused(
        run_qvl(args(kTiny, {"-i", image("cut.jpg", jpg.substr(0, jpg.size() / 2)).string()})),
        kInput, "cut.jpg");
    expect_refused(run_qvl(args(kTiny, {"-i", image("soi.jpg", jpg.substr(0, 2)).string()})),
                   kInput, "soi.jpg");
}

TEST_F(BadInput, ImagePngBadCrc) {
    std::string png = make_png(8, 8);
    png[8 + 8 + 13] ^= 0x55;  // the IHDR CRC (signature, length + type, 13 body bytes)
    expect_refused(run_qvl(args(kTiny, {"-i", image("crc.png", png).string()})), kInput, "crc.png");
}

TEST_F(BadInput, ImagePngClaims100000Squared) {
    // A valid IHDR (CRC fixed) claiming 100000 x 100000 RGB, then a few bytes of data.
    const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + png_ihdr(100000, 100000) +
                            png_chunk("IDAT", zlib_stored(std::string(64, '\0'))) +
                            png_chunk("IEND", "");
    const RunResult r = run_qvl(args(kTiny, {"-i", image("huge.png", png).string()}));
    // A pixel count over the decoder's limit is an invalid input, as for every format: exit 4
    // (the limit is named); the file is refused before any pixel memory is allocated.
    expect_refused(r, kInput, "huge.png");
    EXPECT_NE(r.err.find("exceeds the limit"), std::string::npos) << r.err;
}

TEST_F(BadInput, ImageJpegClaimsHugeSize) {
    std::string jpg = read_file(kJpeg);
    // SOF0/SOF2 marker: FF C0 or FF C2, then length (2), precision (1), height (2), width (2).
    std::size_t sof = std::string::npos;
    for (std::size_t i = 2; i + 9 < jpg.size(); ++i) {
        if (jpg[i] == '\xff' && (jpg[i + 1] == '\xc0' || jpg[i + 1] == '\xc2')) {
            sof = i;
            break;
        }
    }
    ASSERT_NE(sof, std::string::npos);
    for (std::size_t k : {sof + 5, sof + 7}) {
        jpg[k] = '\xfd';
        jpg[k + 1] = '\xe8';  // 65000, under libjpeg's 65500 maximum: 4.2e9 pixels
    }
    const RunResult r = run_qvl(args(kTiny, {"-i", image("huge.jpg", jpg).string()}));
    expect_refused(r, kInput, "huge.jpg");
    EXPECT_NE(r.err.find("exceeds the limit"), std::string::npos) << r.err;
}

const fs::path kImages = fs::path(QVL_TEST_DATA_DIR) / "images";

TEST_F(BadInput, ImageTruncatedWebpAndGif) {
    for (const char* file : {"rgba_lossy.webp", "rgb_lossless.webp", "palette16.gif"}) {
        const std::string bytes = read_file(kImages / file);
        const std::string cut = std::string("cut-") + file;
        expect_refused(
            run_qvl(args(kTiny, {"-i", image(cut, bytes.substr(0, bytes.size() / 2)).string()})),
            kInput, cut);
        const std::string head = std::string("head-") + file;
        expect_refused(run_qvl(args(kTiny, {"-i", image(head, bytes.substr(0, 14)).string()})),
                       kInput, head);
    }
}

TEST_F(BadInput, ImageWebpAndGifClaimHugeSize) {
    // An animated WebP's VP8X canvas (24-bit width - 1, height - 1 at bytes 24 and 27) set to
    // 40000 x 40000 (libwebp itself refuses 2^32 pixels) and a GIF's logical screen (16-bit
    // width, height at bytes 6 and 8) set to its maximum.
    std::string webp = read_file(kImages / "animated.webp");
    ASSERT_EQ(webp.substr(12, 4), "VP8X");
    for (std::size_t k : {24, 27}) webp.replace(k, 3, "\x3f\x9c\x00", 3);
    std::string gif = read_file(kImages / "palette16.gif");
    for (std::size_t k = 6; k < 10; ++k) gif[k] = '\xff';
    for (const auto& [name, bytes] : {std::pair{"huge.webp", webp}, std::pair{"huge.gif", gif}}) {
        const RunResult r = run_qvl(args(kTiny, {"-i", image(name, bytes).string()}));
        expect_refused(r, kInput, name);
        EXPECT_NE(r.err.find("exceeds the limit"), std::string::npos) << r.err;
    }
}

TEST_F(BadInput, ImageWebpAndGifWork) {
    for (const char* file : {"rgba_lossless.webp", "animated.gif", "offset_frame_trns.gif"}) {
        expect_success(run_qvl(args(kTiny, {"-i", (kImages / file).string()})));
    }
}

TEST_F(BadInput, ImageThin1x1000) {
    expect_refused(run_qvl(args(kTiny, {"-i", image("thin.png", make_png(1, 1000)).string()})),
                   kInput, "thin.png");
}

TEST_F(BadInput, ImageOnePixelWorks) {
    expect_success(run_qvl(args(kTiny, {"-i", image("one.png", make_png(1, 1)).string()})));
}

}  // namespace
}  // namespace qvl::bad_input
