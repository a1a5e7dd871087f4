// Video decoding tests: the sampled frames of every clip in tests/data/videos against PyAV's
// rgb24 frames (make_video_goldens.py writes them; PyAV is what transformers decodes with), the
// metadata HF samples from, sparse sampling that skips whole groups of pictures, and the
// bad-video suite: empty, garbage, other containers and codecs, huge dimensions, every limit,
// truncations and bit flips that must fail cleanly (run under ASan/UBSan in CI), with nothing
// printed by libav.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/json.h"
#include "io/video.h"
#include "support/file_bytes.h"
namespace qvl::io {
namespace {

using base::ErrorCode;

const std::filesystem::path kVideos = std::filesystem::path(QVL_TEST_DATA_DIR) / "videos";

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
    return test::file_bytes(path);
}

FrameSampler fixed(std::vector<std::int64_t> indices) {
    return
        [indices](const VideoInfo&) -> base::Result<std::vector<std::int64_t>> { return indices; };
}

FrameSampler first_frame() { return fixed({0}); }

std::vector<std::int64_t> int_list(const JsonValue& v) {
    std::vector<std::int64_t> out;
    for (const JsonValue& x : v.items()) out.push_back(x.as_int());
    return out;
}

// Every sampled frame of golden case `c` byte-identical to PyAV's, and HF's metadata.
void expect_pyav_frames(const JsonValue& c, const std::vector<std::int64_t>& indices,
                        const base::Result<Video>& video) {
    const std::string name = c.find("name")->as_string();
    ASSERT_TRUE(video.ok()) << name << ": " << video.status().message();
    const std::string frames_file = c.find("frames_file")->as_string();
    EXPECT_EQ(video->info.width, c.find("width")->as_int()) << name;
    EXPECT_EQ(video->info.height, c.find("height")->as_int()) << name;
    EXPECT_EQ(video->info.total_frames, c.find("total_frames")->as_int()) << name;
    EXPECT_EQ(video->info.fps, c.find("fps")->as_double()) << name;
    const std::vector<std::byte> expected = read_bytes(kVideos / frames_file);
    ASSERT_EQ(video->frames.size(), indices.size()) << name;
    const std::size_t frame_bytes = std::size_t(video->info.width) * video->info.height * 3;
    ASSERT_EQ(expected.size(), frame_bytes * indices.size()) << name;
    for (std::size_t k = 0; k < indices.size(); ++k) {
        const std::vector<std::uint8_t>& rgb = video->frames[k].rgb;
        ASSERT_EQ(rgb.size(), frame_bytes);
        const auto* want = reinterpret_cast<const std::uint8_t*>(expected.data()) + k * frame_bytes;
        const auto diff = std::mismatch(rgb.begin(), rgb.end(), want);
        ASSERT_TRUE(diff.first == rgb.end())
            << name << ": frame " << indices[k] << " differs from PyAV at byte "
            << (diff.first - rgb.begin());
    }
}

TEST(VideoDecode, SampledFramesMatchPyAv) {
    auto cases = read_json_file(kVideos / "cases.json");
    ASSERT_TRUE(cases.ok()) << cases.status().message();
    int checked = 0;
    for (const JsonValue& c : cases->find("cases")->items()) {
        const std::string name = c.find("name")->as_string();
        const std::string frames_file = c.find("frames_file")->as_string();
        if (frames_file != name + ".frames.rgb") continue;  // the same frames as an earlier case
        const std::vector<std::int64_t> indices = int_list(*c.find("indices"));
        // Frame-threaded decoding gives the same bytes (VideoLimits::threads).
        for (const int threads : {1, 3}) {
            SCOPED_TRACE(::testing::Message() << "threads " << threads);
            VideoLimits limits;
            limits.threads = threads;
            expect_pyav_frames(
                c, indices,
                load_video(kVideos / c.find("clip")->as_string(), limits, fixed(indices)));
        }
        ++checked;
    }
    EXPECT_GE(checked, 8);
}

TEST(VideoDecode, ContainersAndCodecsAreNamed) {
    struct Case {
        const char* file;
        const char* container;
        const char* codec;
    };
    for (const Case& c :
         {Case{"shapes_100x62_12fps.mp4", "mp4", "h264"},
          Case{"text_90x70_7fps.webm", "webm", "vp9"}, Case{"anim_50x38_5fps.gif", "gif", "gif"},
          Case{"hevc_66x46_10fps.mp4", "mp4", "hevc"}, Case{"vp8_58x42_8fps.webm", "webm", "vp8"},
          Case{"av1_64x36_6fps.mp4", "mp4", "av1"}}) {
        auto video = load_video(kVideos / c.file, {}, first_frame());
        ASSERT_TRUE(video.ok()) << c.file << ": " << video.status().message();
        EXPECT_EQ(video->info.container, c.container);
        EXPECT_EQ(video->info.codec, c.codec);
        EXPECT_TRUE(looks_like_video(read_bytes(kVideos / c.file)));
    }
}

// Sparse, repeated and backward-free samples give the frames a full in-order decode gives:
// frame 29 alone needs only the last group of pictures (the clip has a key frame every 8).
TEST(VideoDecode, SparseSamplingEqualsFullDecode) {
    const auto path = kVideos / "shapes_100x62_12fps.mp4";
    std::vector<std::int64_t> all(30);
    for (std::int64_t i = 0; i < 30; ++i) all[std::size_t(i)] = i;
    auto full = load_video(path, {}, fixed(all));
    ASSERT_TRUE(full.ok()) << full.status().message();
    EXPECT_EQ(full->decoded_frames, 30);
    struct Pick {
        std::vector<std::int64_t> frames;
        std::int64_t max_decoded;  // the groups of pictures (and reference frames) they need
    };
    for (const int threads : {1, 2}) {
        VideoLimits limits;
        limits.threads = threads;
        for (const Pick& pick : {Pick{{29}, 6}, Pick{{3, 3, 17, 25}, 3 * 8},
                                 Pick{{8, 9, 16, 24}, 3 * 8}, Pick{{0, 1, 2, 29}, 2 * 8}}) {
            auto sparse = load_video(path, limits, fixed(pick.frames));
            ASSERT_TRUE(sparse.ok()) << sparse.status().message();
            ASSERT_EQ(sparse->frames.size(), pick.frames.size());
            EXPECT_LE(sparse->decoded_frames, pick.max_decoded) << "threads " << threads;
            EXPECT_GE(sparse->decoded_frames, std::int64_t(pick.frames.size()) - 1);
            for (std::size_t k = 0; k < pick.frames.size(); ++k) {
                EXPECT_EQ(sparse->frames[k].rgb, full->frames[std::size_t(pick.frames[k])].rgb)
                    << "frame " << pick.frames[k] << ", threads " << threads;
            }
        }
    }
}

struct BadCase {
    const char* what;
    std::vector<std::byte> bytes;
    VideoLimits limits;
    ErrorCode code;
    const char* message_part;
};

std::vector<std::byte> text(std::string_view s) {
    std::vector<std::byte> out(s.size());
    std::memcpy(out.data(), s.data(), s.size());
    return out;
}

std::vector<BadCase> bad_cases() {
    const auto mp4 = read_bytes(kVideos / "shapes_100x62_12fps.mp4");
    auto gif_huge = read_bytes(kVideos / "anim_50x38_5fps.gif");
    for (int i : {6, 7, 8, 9}) gif_huge[std::size_t(i)] = std::byte{0xff};  // 65535 x 65535
    VideoLimits tiny_pixels, few_frames, short_clip, few_bytes, small_file;
    tiny_pixels.max_pixels = 1000;
    few_frames.max_stream_frames = 10;
    short_clip.max_duration_s = 1.0;
    few_bytes.max_decoded_bytes = 10000;
    small_file.max_file_bytes = 1000;
    return {
        {"empty", {}, {}, ErrorCode::kCorruptFile, "empty file"},
        {"garbage",
         text("this is not a video at all"),
         {},
         ErrorCode::kUnsupported,
         "not an mp4, webm/mkv or gif video"},
        {"png",
         read_bytes(std::filesystem::path(QVL_TEST_DATA_DIR) / "images" / "gray8.png"),
         {},
         ErrorCode::kUnsupported,
         "not an mp4"},
        {"heif",
         text(std::string("\0\0\0\x18"
                          "ftypheic\0\0\0\0",
                          16)),
         {},
         ErrorCode::kUnsupported,
         "heif/avif image"},
        {"truncated header",
         std::vector<std::byte>(mp4.begin(), mp4.begin() + 40),
         {},
         ErrorCode::kCorruptFile,
         "corrupt or truncated mp4"},
        {"ebml only", text("\x1a\x45\xdf\xa3"), {}, ErrorCode::kCorruptFile, "webm"},
        {"wrong codec",
         read_bytes(kVideos / "mpeg2_32x32.mp4"),
         {},
         ErrorCode::kUnsupported,
         "video codec 'mpeg2video' is not supported"},
        {"audio only",
         read_bytes(kVideos / "audio_only.mp4"),
         {},
         ErrorCode::kUnsupported,
         "no video stream"},
        {"huge dimensions",
         read_bytes(kVideos / "huge_4160x4160.mp4"),
         {},
         ErrorCode::kOutOfRange,
         "4160x4160 = 17305600 pixels exceed"},
        {"gif of 65535x65535", gif_huge, {}, ErrorCode::kCorruptFile, "no frame size"},
        {"pixel limit", mp4, tiny_pixels, ErrorCode::kOutOfRange, "VideoLimits::max_pixels"},
        {"frame limit", mp4, few_frames, ErrorCode::kOutOfRange, "max_stream_frames"},
        {"duration limit", mp4, short_clip, ErrorCode::kOutOfRange, "max_duration_s"},
        {"decoded bytes limit", mp4, few_bytes, ErrorCode::kOutOfRange, "max_decoded_bytes"},
        {"file limit", mp4, small_file, ErrorCode::kOutOfRange, "video file limit"},
    };
}

TEST(VideoDecode, BadVideosFailWithNamedErrors) {
    for (const BadCase& c : bad_cases()) {
        testing::internal::CaptureStderr();
        auto video = decode_video(c.bytes, c.limits, "clip", fixed({0, 1}));
        const std::string printed = testing::internal::GetCapturedStderr();
        ASSERT_FALSE(video.ok()) << c.what;
        EXPECT_EQ(video.status().code(), c.code) << c.what << ": " << video.status().message();
        EXPECT_NE(video.status().message().find(c.message_part), std::string::npos)
            << c.what << ": " << video.status().message();
        EXPECT_EQ(video.status().message().rfind("clip: ", 0), 0u) << video.status().message();
        EXPECT_EQ(printed, "") << c.what << ": libav wrote to stderr";
    }
}

TEST(VideoDecode, BadSamplesAreRefused) {
    const auto mp4 = read_bytes(kVideos / "shapes_100x62_12fps.mp4");
    VideoLimits few;
    few.max_sampled_frames = 2;
    for (const auto& [pick, limits] : {std::pair{std::vector<std::int64_t>{}, VideoLimits{}},
                                       {{5, 4}, VideoLimits{}},
                                       {{30}, VideoLimits{}},
                                       {{-1}, VideoLimits{}},
                                       {{0, 1, 2}, few}}) {
        auto video = decode_video(mp4, limits, "clip", fixed(pick));
        ASSERT_FALSE(video.ok());
        EXPECT_TRUE(video.status().code() == ErrorCode::kInvalidArgument ||
                    video.status().code() == ErrorCode::kOutOfRange)
            << video.status().message();
    }
}

// Every prefix length in coarse steps and a sweep of flipped bytes: never a crash or a hang, an
// error always says something, and a success has frames of the announced size.
TEST(VideoDecode, TruncationsAndBitFlipsFailCleanly) {
    testing::internal::CaptureStderr();
    for (const char* file : {"shapes_100x62_12fps.mp4", "text_90x70_7fps.webm",
                             "anim_50x38_5fps.gif", "narrow_24x72_3fps.mp4", "hevc_66x46_10fps.mp4",
                             "vp8_58x42_8fps.webm", "av1_64x36_6fps.mp4"}) {
        const auto bytes = read_bytes(kVideos / file);
        auto check = [&](const std::vector<std::byte>& b, const std::string& what) {
            for (const int threads : {1, 2}) {  // frame threads report errors the same way
                VideoLimits limits;
                limits.threads = threads;
                auto video = decode_video(b, limits, "clip", fixed({0, 2, 5}));
                if (!video.ok()) {
                    EXPECT_FALSE(video.status().message().empty()) << file << " " << what;
                    continue;
                }
                for (const Image& f : video->frames) {
                    EXPECT_EQ(f.rgb.size(), std::size_t(f.width) * f.height * 3) << file << what;
                }
            }
        };
        for (std::size_t n = 0; n < bytes.size(); n += bytes.size() / 23 + 1)
            check(std::vector<std::byte>(bytes.begin(), bytes.begin() + std::ptrdiff_t(n)),
                  "prefix " + std::to_string(n));
        for (std::size_t at = 0; at < bytes.size(); at += bytes.size() / 41 + 1) {
            auto flipped = bytes;
            flipped[at] ^= std::byte{0x5a};
            check(flipped, "flip at " + std::to_string(at));
        }
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(VideoDecode, MissingFileIsNotFound) {
    auto video = load_video(kVideos / "no_such.mp4", {}, first_frame());
    ASSERT_FALSE(video.ok());
    EXPECT_EQ(video.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace qvl::io
