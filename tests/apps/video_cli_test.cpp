// qvl-run with videos (issue 50, docs/cli.md): --video mixed with -i in the order given, the
// sampling flags, --messages video parts, --json and --dry-run report the videos and count their
// tokens, and a damaged or unsupported video exits 4 with one error line naming the file (the
// bad-input suite's tools, bad_input_support.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "bad_input_support.h"

namespace qvl::bad_input {
namespace {

const fs::path kVideos = fs::path(QVL_TEST_DATA_DIR) / "videos";
const std::string kClip = (kVideos / "shapes_100x62_12fps.mp4").string();
const std::string kGif = (kVideos / "anim_50x38_5fps.gif").string();

// Ids of the run's --json or --tokenize --json output ("prompt_tokens": [...]).
std::string prompt_tokens(const std::string& out) {
    const std::size_t at = out.find("\"prompt_tokens\": [");
    if (at == std::string::npos) return {};
    return out.substr(at, out.find(']', at) - at);
}

TEST_F(BadInput, VideoRunsAndReportsItself) {
    const RunResult r = run_qvl(args(kTiny, {"--video", kClip, "-i", kPng.string(), "--json"}));
    expect_success(r);
    // The video comes first, as given: its timestamp text opens the user turn.
    EXPECT_NE(r.out.find("\"prompt_tokens\": [151644, 872, 198, 27, 15, 13"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\"videos\": [{\"path\": \"" + kClip +
                         "\", \"width\": 100, \"height\": 62, \"resized_width\": 224, "
                         "\"resized_height\": 128, \"tokens\": 84, \"frames\": 5, \"fps\": 12, "
                         "\"duration_s\": 2.5, \"sample_fps\": 2, \"max_frames\": 768}]"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\"images\": [{\"path\": \"" + kPng.string()), std::string::npos);
}

TEST_F(BadInput, VideoOrderAndSamplingFlags) {
    const RunResult video_first =
        run_qvl(args(kTiny, {"--video", kGif, "-i", kPng.string(), "--tokenize", "--json"}));
    const RunResult image_first =
        run_qvl(args(kTiny, {"-i", kPng.string(), "--video", kGif, "--tokenize", "--json"}));
    expect_success(video_first);
    expect_success(image_first);
    EXPECT_NE(prompt_tokens(video_first.out), prompt_tokens(image_first.out));
    const RunResult slow = run_qvl(args(kTiny, {"--video", kClip, "--video-fps", "1",
                                                "--video-max-frames", "4", "--dry-run", "--json"}));
    expect_success(slow);
    EXPECT_NE(slow.out.find("\"frames\": 4, \"fps\": 12, \"duration_s\": 2.5, \"sample_fps\": 1, "
                            "\"max_frames\": 4"),
              std::string::npos)
        << slow.out;
}

TEST_F(BadInput, VideoDryRunCountsItsTokens) {
    const RunResult with = run_qvl(args(kTiny, {"--video", kClip, "--dry-run", "--json"}));
    const RunResult without = run_qvl(args(kTiny, {"--dry-run", "--json"}));
    expect_success(with);
    expect_success(without);
    const auto tokens = [](const std::string& out) {
        const std::size_t at = out.find("\"prompt_tokens\": ");
        return at == std::string::npos ? -1 : std::stoi(out.substr(at + 17));
    };
    // 84 video tokens, three timestamps and three vision start/end pairs around them.
    EXPECT_GT(tokens(with.out), tokens(without.out) + 84) << with.out;
    EXPECT_NE(with.out.find("\"gflop\": {\"vision\": "), std::string::npos);
    EXPECT_EQ(with.out.find("\"gflop\": {\"vision\": 0.00"), std::string::npos) << with.out;
}

// The shape in a --dump-* .npy file's header, "(rows, cols)".
std::string npy_shape(const fs::path& npy) {
    std::ifstream in(npy, std::ios::binary);
    std::string head(128, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    const std::size_t open = head.find("'shape': (");
    const std::size_t close = head.find(')');
    if (open == std::string::npos || close == std::string::npos || close < open) return "?";
    return std::string(head.begin() + std::ptrdiff_t(open + 9),
                       head.begin() + std::ptrdiff_t(close + 1));
}

// --dump-vision writes the first visual input's features: a video's rows are every frame pair's
// tokens (84 for the clip's 3 pairs; the conformance script compares them with transformers'),
// an image before it keeps the dump to the image's.
TEST_F(BadInput, VideoDumpVisionHasEveryFramePair) {
    const fs::path v = scratch_.path() / "v.npy";
    const RunResult video_first = run_qvl(args(
        kTiny, {"--video", kClip, "-i", kPng.string(), "-n", "1", "--dump-vision", v.string()}));
    expect_success(video_first);
    EXPECT_EQ(npy_shape(v), "(84, 64)");
    const RunResult image_first =
        run_qvl(args(kTiny, {"-i", kPng.string(), "--video", kClip, "-n", "1", "--json",
                             "--dump-vision", v.string()}));
    expect_success(image_first);
    const std::size_t images = image_first.out.find("\"images\": [{");
    const std::size_t tokens = image_first.out.find("\"tokens\": ", images);
    ASSERT_NE(tokens, std::string::npos) << image_first.out;
    const int image_tokens = std::atoi(image_first.out.c_str() + tokens + 10);
    EXPECT_GT(image_tokens, 0);
    EXPECT_EQ(npy_shape(v), fmt::format("({}, 64)", image_tokens));
}

TEST_F(BadInput, VideoInMessagesFile) {
    const fs::path m = scratch_.write(
        "m.json", "[{\"role\": \"user\", \"content\": [{\"type\": \"video\", \"video\": \"" +
                      kClip + "\"}, {\"type\": \"text\", \"text\": \"Describe.\"}]}]");
    const RunResult r = run_qvl(args(kTiny, {"--messages", m.string(), "--json"}));
    expect_success(r);
    EXPECT_NE(r.out.find("\"tokens\": 84, \"frames\": 5"), std::string::npos) << r.out;
    const RunResult capped = run_qvl(
        args(kTiny, {"--messages", m.string(), "--video-max-frames", "4", "--dry-run", "--json"}));
    expect_success(capped);
    EXPECT_NE(capped.out.find("\"frames\": 4"), std::string::npos) << capped.out;
}

TEST_F(BadInput, BadVideosExit4NamingTheFile) {
    expect_refused(run_qvl(args(kTiny, {"--video", (scratch_.path() / "gone.mp4").string()})),
                   kInput, "gone.mp4");
    expect_refused(run_qvl(args(kTiny, {"--video", image("clip.mp4", "not a video").string()})),
                   kInput, "clip.mp4");
    const std::string mp4 = read_file(kClip);
    expect_refused(
        run_qvl(args(kTiny, {"--video", image("cut.mp4", mp4.substr(0, mp4.size() / 3)).string()})),
        kInput, "cut.mp4");
    expect_refused(run_qvl(args(kTiny, {"--video", (kVideos / "mpeg2_32x32.mp4").string()})),
                   kInput, "mpeg2video");
    expect_refused(run_qvl(args(kTiny, {"--video", (kVideos / "audio_only.mp4").string()})), kInput,
                   "audio_only.mp4");
    expect_refused(run_qvl(args(kTiny, {"--video", kClip, "--video-fps", "0"})), kUsage,
                   "--video-fps");
    expect_refused(run_qvl(args(kTiny, {"--video", kClip, "--video-max-frames", "0"})), kUsage,
                   "--video-max-frames");
    expect_refused(run_qvl(args(kTiny, {"--video", "-", "-i", "-"})), kUsage, "stdin");
}

}  // namespace
}  // namespace qvl::bad_input
