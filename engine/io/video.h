// Video decoding: MP4/MOV (H.264, HEVC, AV1, VP9), WebM/Matroska (VP8, VP9, AV1, H.264) and
// animated GIF through Debian's libavformat/libavcodec/libswscale, into the 8-bit RGB frames the
// reference gets from PyAV (transformers' read_video_pyav: `frame.to_ndarray(format="rgb24")`):
//   - the container is sniffed from the bytes (never the file name) and only the three families
//     above are opened, so the rest of libavformat's demuxers never see hostile input;
//   - frame i is the i-th frame in presentation order, as in PyAV's sequential decode;
//   - the stream's frame count and average frame rate are the metadata HF samples from
//     (stream.frames, stream.average_rate); a container without a frame count (WebM, some GIFs)
//     is counted from its packets, where HF's PyAV reader would see 0 frames and fail;
//   - only the frames sampling asks for are converted, and whole groups of pictures with no
//     sampled frame are skipped by starting the decoder at the key frame before the next one
//     (containers with presentation timestamps and key-frame flags; GIF is decoded in order);
//   - YUV -> RGB with swscale's bilinear flags (PyAV's default) and the stream's matrix and range
//     (BT.601 when untagged; BT.709, FCC, SMPTE 240M, BT.2020 when tagged), as PyAV asks swscale;
//     a GIF's alpha is dropped, as PyAV's rgb24 conversion does (no compositing on white).
// libav's own logging is silenced for the whole process the first time a video is opened: a
// library must not write to the host program's stderr; every problem becomes a Status instead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/image.h"

namespace qvl::io {

struct VideoLimits {
    std::uint64_t max_file_bytes = 1ull << 30;
    std::uint64_t max_pixels =
        4096ull * 4096;                        // width * height of a frame, checked before decoding
    std::uint64_t max_stream_frames = 100000;  // frames (packets) in the video stream
    double max_duration_s = 3 * 3600.0;        // frames / fps
    std::uint64_t max_sampled_frames = 2048;   // frames the sampler may ask for
    std::uint64_t max_decoded_bytes = 2ull << 30;  // RGB bytes of the sampled frames together
    // Decoder threads (libavcodec frame threading where the codec has it: H.264, HEVC, VP8, VP9;
    // dav1d's own threads for AV1), used when the samples need long runs of frames (one thread
    // for sparse samples of short groups of pictures, where frames in flight would be wasted).
    // Decoders are bit-exact for any thread count, so frames do not depend on it (tested on
    // every fixture); it changes wall time only.
    int threads = 1;
};

// What the container says, as HF's VideoMetadata sees it.
struct VideoInfo {
    int width = 0;
    int height = 0;
    std::int64_t total_frames = 0;
    double fps = 0;         // the stream's average frame rate
    double duration_s = 0;  // total_frames / fps (HF computes it so)
    std::string container;  // "mp4", "webm" or "gif"
    std::string codec;      // libavcodec's name: "h264", "vp9", "gif", ...
};

struct Video {
    VideoInfo info;
    std::vector<std::int64_t> indices;  // the sampled frame indices, as the sampler gave them
    std::vector<Image> frames;          // frames[k] is frame indices[k]
    std::int64_t decoded_frames = 0;    // frames the decoder produced (what sampling cost)
};

// Chooses the frames to decode from the metadata (image/video_preprocess.h sample_frame_indices
// in the engine): indices in [0, total_frames), non-decreasing (repeats allowed).
using FrameSampler = std::function<base::Result<std::vector<std::int64_t>>(const VideoInfo& info)>;

// Decodes the frames `sample` picks from a video held in memory; `name` prefixes every message.
// Errors: empty, truncated or corrupt data, or a frame that does not decode -> kCorruptFile;
// another container, a codec outside the list above, no video stream -> kUnsupported; a limit
// exceeded -> kOutOfRange naming the limit; indices out of order or range -> kInvalidArgument.
base::Result<Video> decode_video(std::span<const std::byte> bytes, const VideoLimits& limits,
                                 std::string_view name, const FrameSampler& sample);

// Maps the file and decodes it. A missing file -> kNotFound; a file over max_file_bytes ->
// kOutOfRange before reading; otherwise as decode_video.
base::Result<Video> load_video(const std::filesystem::path& path, const VideoLimits& limits,
                               const FrameSampler& sample);

// True when the bytes start like a container decode_video opens (for callers that accept both
// images and videos and want to say which one a file is).
bool looks_like_video(std::span<const std::byte> bytes);

}  // namespace qvl::io
