// Fuzzes io/video.h decode_video (MP4, WebM/Matroska and GIF, sniffed from the bytes) with the
// engine's own sampler (image/video_preprocess.h) and, for what decodes, preprocess_video. The
// limits are small so one input stays fast and memory stays bounded; the shapes must agree.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_util.h"
#include "image/video_preprocess.h"
#include "io/video.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    qvl::io::VideoLimits limits;
    limits.max_pixels = 512ull * 512;
    limits.max_file_bytes = 1u << 20;
    limits.max_stream_frames = 2000;
    limits.max_sampled_frames = 16;
    limits.max_decoded_bytes = 16ull << 20;
    limits.threads = 1 + int(size % 2);  // threaded decoding too (frame threads, dav1d's)
    qvl::image::VideoPreprocessConfig config;
    config.base.min_pixels = 32 * 32;
    config.base.max_pixels = 64 * 64 * 8;
    config.max_frames = 8;
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    auto video =
        qvl::io::decode_video(bytes, limits, "fuzz video", [&](const qvl::io::VideoInfo& info) {
            return qvl::image::sample_frame_indices(info, config);
        });
    if (!video.ok()) {
        if (video.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    if (video->frames.size() != video->indices.size() || video->frames.empty())
        qvl::fuzz::fail("frame count disagrees with the sampled indices");
    for (const qvl::io::Image& f : video->frames) {
        if (f.width != video->info.width || f.height != video->info.height ||
            f.rgb.size() != std::size_t(f.width) * std::size_t(f.height) * 3) {
            qvl::fuzz::fail("decoded frame size disagrees with the stream");
        }
    }
    auto pre = qvl::image::preprocess_video(video.value(), config);
    if (!pre.ok()) {
        if (pre.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    const qvl::image::PreprocessConfig& c = config.base;
    const std::size_t row = std::size_t(3) * c.temporal_patch_size * c.patch_size * c.patch_size;
    if (pre->pixel_values.size() != std::size_t(pre->grid_t) * pre->grid_h * pre->grid_w * row ||
        pre->timestamps.size() != std::size_t(pre->grid_t)) {
        qvl::fuzz::fail("pixel_values or timestamps disagree with the grid");
    }
    return 0;
}
