// Internal to engine/io: the container half of video decoding (io/video.h). It opens a sniffed
// container from memory through a custom AVIOContext, picks the video stream, checks the limits
// that the header and the packet index can answer (pixels, frames, duration), and reads every
// packet of the stream without decoding it: the packets give the frame count when the container
// has none and the key frames that decoding may start from. video_demux.cpp and
// video_decode.cpp are the only includers of libav headers.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/video.h"

namespace qvl::io::detail {

struct PacketDeleter {
    void operator()(AVPacket* p) const { av_packet_free(&p); }
};
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;

struct DemuxedVideo {
    VideoInfo info;
    const AVCodecParameters* codecpar = nullptr;  // owned by the format context
    std::vector<PacketPtr> packets;               // decode order
    // The presentation timestamps sorted: frame i is the one whose pts is sorted_pts[i]. Empty
    // when some packet has no pts or the codec is GIF: frames are then counted in output order.
    std::vector<std::int64_t> sorted_pts;
};

// The bytes libavformat reads through the AVIOContext callbacks.
struct MemoryReader {
    std::span<const std::uint8_t> bytes;
    std::int64_t pos = 0;
};

// Owns the format context and its memory reader.
class VideoInput {
  public:
    VideoInput() = default;
    ~VideoInput();
    VideoInput(const VideoInput&) = delete;
    VideoInput& operator=(const VideoInput&) = delete;

    // Opens `bytes` (which must outlive this object) and demuxes the video stream into *out.
    base::Status open(std::span<const std::uint8_t> bytes, const VideoLimits& limits,
                      std::string_view name, DemuxedVideo* out);

  private:
    base::Status open_container(std::span<const std::uint8_t> bytes, std::string_view name);
    base::Status read_packets(int stream, const VideoLimits& limits, std::string_view name,
                              DemuxedVideo* out);

    MemoryReader reader_;
    AVIOContext* io_ = nullptr;
    AVFormatContext* format_ = nullptr;
};

// Decodes the distinct frame indices `ranks` (ascending) into frames[k] and counts the frames
// the decoder produced into *decoded (video_decode.cpp).
base::Status decode_ranks(const DemuxedVideo& d, const std::vector<std::int64_t>& ranks,
                          const VideoLimits& limits, std::string_view name,
                          std::vector<Image>* frames, std::int64_t* decoded);

// Silences libav's logging for the process (once).
void quiet_libav_logging();

// libav's error text for code `err`.
std::string av_error_text(int err);

}  // namespace qvl::io::detail
