// Video preprocessing tests against transformers' Qwen3VLVideoProcessor and Qwen3VLProcessor
// (tests/data/videos/make_video_goldens.py): sampled indices, timestamps, grid and every
// pixel_values float exactly, from the clip's bytes through io::load_video; plus the video
// smart_resize's edges and the config reader.
#include "image/video_preprocess.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/json.h"

namespace qvl::image {
namespace {

using base::ErrorCode;

const std::filesystem::path kVideos = std::filesystem::path(QVL_TEST_DATA_DIR) / "videos";

// The processor kwargs a case was generated with, as a config.
VideoPreprocessConfig config_of(const io::JsonValue& kwargs) {
    VideoPreprocessConfig c;
    if (const io::JsonValue* size = kwargs.find("size")) {
        c.base.min_pixels = size->find("shortest_edge")->as_int();
        c.base.max_pixels = size->find("longest_edge")->as_int();
    }
    if (const io::JsonValue* v = kwargs.find("fps"); v && !v->is_null()) c.fps = v->as_double();
    if (const io::JsonValue* v = kwargs.find("num_frames")) c.num_frames = v->as_int();
    if (const io::JsonValue* v = kwargs.find("max_frames")) c.max_frames = v->as_int();
    if (const io::JsonValue* v = kwargs.find("cap_pixels_per_frame"))
        c.cap_pixels_per_frame = v->as_bool();
    if (const io::JsonValue* v = kwargs.find("max_video_tokens")) c.max_video_tokens = v->as_int();
    return c;
}

std::uint64_t fnv1a64(const std::vector<float>& values) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    const auto* p = reinterpret_cast<const std::uint8_t*>(values.data());
    for (std::size_t i = 0; i < values.size() * sizeof(float); ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

std::vector<float> read_floats(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    std::vector<char> chars((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<float> out(chars.size() / sizeof(float));
    std::memcpy(out.data(), chars.data(), out.size() * sizeof(float));
    return out;
}

void check_case(const io::JsonValue& c) {
    const std::string name = c.find("name")->as_string();
    SCOPED_TRACE(name);
    const VideoPreprocessConfig config = config_of(*c.find("kwargs"));
    auto video = io::load_video(
        kVideos / c.find("clip")->as_string(), {},
        [&](const io::VideoInfo& info) { return sample_frame_indices(info, config); });
    ASSERT_TRUE(video.ok()) << video.status().message();
    std::vector<std::int64_t> indices;
    for (const io::JsonValue& v : c.find("indices")->items()) indices.push_back(v.as_int());
    EXPECT_EQ(video->indices, indices);
    auto pre = preprocess_video(*video, config);
    ASSERT_TRUE(pre.ok()) << pre.status().message();
    const auto& grid = c.find("grid_thw")->items();
    EXPECT_EQ(pre->grid_t, grid[0].as_int());
    EXPECT_EQ(pre->grid_h, grid[1].as_int());
    EXPECT_EQ(pre->grid_w, grid[2].as_int());
    const auto& stamps = c.find("timestamps")->items();
    ASSERT_EQ(pre->timestamps.size(), stamps.size());
    for (std::size_t i = 0; i < stamps.size(); ++i)
        EXPECT_EQ(pre->timestamps[i], stamps[i].as_double()) << "timestamp " << i;
    const auto& shape = c.find("pixel_values_shape")->items();
    ASSERT_EQ(pre->pixel_values.size(), std::size_t(shape[0].as_int() * shape[1].as_int()));
    EXPECT_EQ(fmt::format("{:016x}", fnv1a64(pre->pixel_values)),
              c.find("pixel_values_fnv1a64")->as_string());
    const auto pixels_file = kVideos / (name + ".pixels.f32");
    if (std::filesystem::exists(pixels_file)) {
        const std::vector<float> want = read_floats(pixels_file);
        ASSERT_EQ(want.size(), pre->pixel_values.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(std::memcmp(&want[i], &pre->pixel_values[i], sizeof(float)), 0)
                << "pixel_values[" << i << "] (row " << i / std::size_t(shape[1].as_int())
                << "): " << pre->pixel_values[i] << " vs " << want[i];
        }
    }
}

TEST(VideoPreprocess, MatchesTransformersExactly) {
    auto cases = io::read_json_file(kVideos / "cases.json");
    ASSERT_TRUE(cases.ok()) << cases.status().message();
    const auto& all = cases->find("cases")->items();
    ASSERT_GE(all.size(), 7u);
    for (const io::JsonValue& c : all) check_case(c);
}

TEST(VideoPreprocess, TimestampsPadToTheTemporalPatch) {
    EXPECT_EQ(video_timestamps({0, 3, 6}, 2.0, 2), (std::vector<double>{0.75, 3.0}));
    EXPECT_EQ(video_timestamps({4}, 4.0, 2), (std::vector<double>{1.0}));
}

TEST(VideoPreprocess, SamplingClampsToTheStream) {
    io::VideoInfo info;
    info.total_frames = 3;
    info.fps = 30;
    VideoPreprocessConfig config;  // fps 2 -> 0 frames, min_frames 4, but only 3 exist
    auto indices = sample_frame_indices(info, config);
    ASSERT_TRUE(indices.ok());
    EXPECT_EQ(*indices, (std::vector<std::int64_t>{0, 1, 2}));
    config.num_frames = 5;  // as given: repeats (HF does not clamp num_frames)
    indices = sample_frame_indices(info, config);
    ASSERT_TRUE(indices.ok());
    EXPECT_EQ(*indices, (std::vector<std::int64_t>{0, 0, 1, 2, 2}));
}

TEST(VideoPreprocess, SmartResizeEdges) {
    // One frame is fewer than the temporal patch: HF raises.
    EXPECT_EQ(smart_resize_video(1, 64, 64, 2, 32, 4096, 1 << 20).status().code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(smart_resize_video(4, 1, 300, 2, 32, 4096, 1 << 20).status().code(),
              ErrorCode::kInvalidArgument);
    // A side below the factor is scaled up first (24x72 -> 32x96), then fits the budget.
    auto size = smart_resize_video(8, 72, 24, 2, 32, 4096, 1 << 24);
    ASSERT_TRUE(size.ok());
    EXPECT_EQ(*size, (std::pair<int, int>(96, 32)));
}

TEST(VideoPreprocess, ConfigReaderTakesVideoDefaults) {
    auto missing = load_video_preprocess_config(kVideos / "no_such.json");
    ASSERT_TRUE(missing.ok());
    EXPECT_EQ(missing->base.min_pixels, 128 * 32 * 32);
    EXPECT_EQ(missing->base.max_pixels, 32 * 32 * 768);
    EXPECT_EQ(missing->fps, 2.0);
}

// The model's video_preprocessor_config.json as Qwen3-VL ships it (size only), plus the video
// keys and the combinations the processor refuses.
TEST(VideoPreprocess, ConfigReaderReadsTheFile) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("qvl_video_config_" + std::to_string(::getpid()) + ".json");
    auto load = [&](const std::string& json) {
        std::ofstream(path) << json;
        return load_video_preprocess_config(path);
    };
    auto shipped = load(R"({"size": {"longest_edge": 25165824, "shortest_edge": 4096},
        "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "video_processor_type": "Qwen3VLVideoProcessor"})");
    ASSERT_TRUE(shipped.ok()) << shipped.status().message();
    EXPECT_EQ(shipped->base.min_pixels, 4096);
    EXPECT_EQ(shipped->base.max_pixels, 25165824);
    EXPECT_EQ(shipped->fps, 2.0);
    EXPECT_FALSE(shipped->num_frames.has_value());
    auto keys = load(R"({"fps": 1.5, "min_frames": 2, "max_frames": 9,
        "cap_pixels_per_frame": true, "max_video_tokens": 100})");
    ASSERT_TRUE(keys.ok()) << keys.status().message();
    EXPECT_EQ(keys->fps, 1.5);
    EXPECT_EQ(keys->min_frames, 2);
    EXPECT_EQ(keys->max_frames, 9);
    EXPECT_TRUE(keys->cap_pixels_per_frame);
    EXPECT_EQ(keys->max_video_tokens, 100);
    EXPECT_EQ(keys->base.min_pixels, 128 * 32 * 32);  // video defaults where absent
    EXPECT_EQ(load(R"({"fps": 2, "num_frames": 8})").status().code(), ErrorCode::kUnsupported);
    EXPECT_EQ(load(R"({"do_sample_frames": false})").status().code(), ErrorCode::kUnsupported);
    EXPECT_EQ(load(R"({"min_frames": 9, "max_frames": 3})").status().code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(load(R"({"fps": "two"})").status().code(), ErrorCode::kInvalidArgument);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace qvl::image
