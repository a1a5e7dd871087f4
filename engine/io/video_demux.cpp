#include "io/video_demux.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
}

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

namespace qvl::io::detail {

using base::ErrorCode;

void quiet_libav_logging() {
    static std::once_flag once;
    std::call_once(once, [] { av_log_set_level(AV_LOG_QUIET); });
}

std::string av_error_text(int err) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(err, text, sizeof(text));
    return text;
}

namespace {

bool starts_with(std::span<const std::uint8_t> b, std::string_view magic, std::size_t at = 0) {
    return b.size() >= at + magic.size() &&
           std::memcmp(b.data() + at, magic.data(), magic.size()) == 0;
}

struct Sniffed {
    const char* demuxer = nullptr;  // av_find_input_format name
    const char* container = nullptr;
};

// The three container families decode_video opens, recognised by their first bytes. An ISO
// file whose brand says still image (HEIF/AVIF) is named as such instead of half-opened.
base::Result<Sniffed> sniff(std::span<const std::uint8_t> b, std::string_view name) {
    if (b.empty()) return base::error(ErrorCode::kCorruptFile, "{}: empty file (0 bytes)", name);
    if (starts_with(b, "\x1a\x45\xdf\xa3")) return Sniffed{"matroska", "webm"};
    if (starts_with(b, "GIF87a") || starts_with(b, "GIF89a")) return Sniffed{"gif", "gif"};
    for (const char* box : {"ftyp", "moov", "mdat", "free", "wide", "skip"}) {
        if (!starts_with(b, box, 4)) continue;
        for (const char* still : {"heic", "heix", "mif1", "msf1", "avif", "avis"}) {
            if (std::string_view(box) == "ftyp" && starts_with(b, still, 8)) {
                return base::error(ErrorCode::kUnsupported,
                                   "{}: a heif/avif image ('{}' brand), not a video", name, still);
            }
        }
        return Sniffed{"mp4", "mp4"};
    }
    std::string head;
    for (std::size_t i = 0; i < std::min<std::size_t>(b.size(), 4); ++i)
        head += fmt::format("{}{:02x}", i ? " " : "", b[i]);
    return base::error(ErrorCode::kUnsupported,
                       "{}: not an mp4, webm/mkv or gif video (the file starts with bytes {})",
                       name, head);
}

// Codecs whose Debian decoders are well kept and that people put in these containers.
bool accepted_codec(AVCodecID id) {
    switch (id) {
        case AV_CODEC_ID_H264:
        case AV_CODEC_ID_HEVC:
        case AV_CODEC_ID_VP8:
        case AV_CODEC_ID_VP9:
        case AV_CODEC_ID_AV1:
        case AV_CODEC_ID_GIF:
            return true;
        default:
            return false;
    }
}

int read_bytes(void* opaque, std::uint8_t* buf, int size) {
    auto* reader = static_cast<MemoryReader*>(opaque);
    const std::int64_t left = std::int64_t(reader->bytes.size()) - reader->pos;
    if (left <= 0) return AVERROR_EOF;
    const int n = int(std::min<std::int64_t>(left, size));
    std::memcpy(buf, reader->bytes.data() + reader->pos, std::size_t(n));
    reader->pos += n;
    return n;
}

std::int64_t seek_bytes(void* opaque, std::int64_t offset, int whence) {
    auto* reader = static_cast<MemoryReader*>(opaque);
    const auto size = std::int64_t(reader->bytes.size());
    std::int64_t to = 0;
    switch (whence & ~AVSEEK_FORCE) {
        case AVSEEK_SIZE:
            return size;
        case SEEK_SET:
            to = offset;
            break;
        case SEEK_CUR:
            to = reader->pos + offset;
            break;
        case SEEK_END:
            to = size + offset;
            break;
        default:
            return AVERROR(EINVAL);
    }
    if (to < 0 || to > size) return AVERROR(EINVAL);
    reader->pos = to;
    return to;
}

// The stream's frame rate as PyAV's average_rate; r_frame_rate when the container gives none.
double stream_fps(const AVStream* s) {
    for (AVRational r : {s->avg_frame_rate, s->r_frame_rate}) {
        if (r.num > 0 && r.den > 0) return av_q2d(r);
    }
    return 0;
}

// Frame identity by pts needs every packet's pts, distinct, and a key frame first; GIF frames
// are deltas on the canvas whatever their flags say, so they are always decoded in order.
std::vector<std::int64_t> presentation_order(const DemuxedVideo& d) {
    if (d.codecpar->codec_id == AV_CODEC_ID_GIF || d.packets.empty() ||
        (d.packets.front()->flags & AV_PKT_FLAG_KEY) == 0) {
        return {};
    }
    std::vector<std::int64_t> pts;
    pts.reserve(d.packets.size());
    for (const PacketPtr& p : d.packets) {
        if (p->pts == AV_NOPTS_VALUE) return {};
        pts.push_back(p->pts);
    }
    std::sort(pts.begin(), pts.end());
    if (std::adjacent_find(pts.begin(), pts.end()) != pts.end()) return {};
    return pts;
}

}  // namespace

VideoInput::~VideoInput() {
    avformat_close_input(&format_);
    if (io_ != nullptr) av_freep(&io_->buffer);
    avio_context_free(&io_);
}

base::Status VideoInput::open_container(std::span<const std::uint8_t> bytes,
                                        std::string_view name) {
    quiet_libav_logging();
    QVL_ASSIGN_OR_RETURN(const Sniffed sniffed, sniff(bytes, name));
    reader_ = {bytes, 0};
    constexpr int kBufferBytes = 1 << 15;
    auto* buffer = static_cast<std::uint8_t*>(av_malloc(kBufferBytes));
    if (buffer != nullptr)
        io_ =
            avio_alloc_context(buffer, kBufferBytes, 0, &reader_, read_bytes, nullptr, seek_bytes);
    if (io_ == nullptr) {
        av_free(buffer);
        return base::error(ErrorCode::kResourceExhausted, "{}: out of memory", name);
    }
    format_ = avformat_alloc_context();
    if (format_ == nullptr)
        return base::error(ErrorCode::kResourceExhausted, "{}: out of memory", name);
    format_->pb = io_;
    format_->flags |= AVFMT_FLAG_CUSTOM_IO;
    // On failure avformat_open_input frees the context and sets format_ to null.
    const int err =
        avformat_open_input(&format_, nullptr, av_find_input_format(sniffed.demuxer), nullptr);
    if (err < 0) {
        return base::error(ErrorCode::kCorruptFile, "{}: corrupt or truncated {} file ({})", name,
                           sniffed.container, av_error_text(err));
    }
    // As PyAV's open does: fills in the frame rate and codec details some containers lack.
    const int info = avformat_find_stream_info(format_, nullptr);
    if (info < 0) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: corrupt {} file: no stream information ({})", name,
                           sniffed.container, av_error_text(info));
    }
    return {};
}

base::Status VideoInput::read_packets(int stream, const VideoLimits& limits, std::string_view name,
                                      DemuxedVideo* out) {
    for (;;) {
        PacketPtr packet(av_packet_alloc());
        if (!packet) return base::error(ErrorCode::kResourceExhausted, "{}: out of memory", name);
        const int err = av_read_frame(format_, packet.get());
        if (err == AVERROR_EOF) break;
        if (err < 0) {
            return base::error(ErrorCode::kCorruptFile,
                               "{}: corrupt or truncated video after {} frames ({})", name,
                               out->packets.size(), av_error_text(err));
        }
        if (packet->stream_index != stream) continue;
        if (out->packets.size() >= limits.max_stream_frames) {
            return base::error(ErrorCode::kOutOfRange,
                               "{}: the video has more than {} frames "
                               "(VideoLimits::max_stream_frames)",
                               name, limits.max_stream_frames);
        }
        out->packets.push_back(std::move(packet));
    }
    return {};
}

namespace {

// The first video stream that is not cover art, as PyAV's streams.video[0] (cover art aside).
base::Result<int> video_stream(const AVFormatContext* format, std::string_view name) {
    for (unsigned i = 0; i < format->nb_streams; ++i) {
        const AVStream* s = format->streams[i];
        if (s->codecpar->codec_type == AVMEDIA_TYPE_VIDEO &&
            (s->disposition & AV_DISPOSITION_ATTACHED_PIC) == 0) {
            return int(i);
        }
    }
    return base::error(ErrorCode::kUnsupported, "{}: the file has no video stream", name);
}

base::Status check_stream(const AVStream* s, const VideoLimits& limits, std::string_view name) {
    const AVCodecParameters* par = s->codecpar;
    if (!accepted_codec(par->codec_id)) {
        const char* codec = avcodec_get_name(par->codec_id);
        return base::error(ErrorCode::kUnsupported,
                           "{}: video codec '{}' is not supported (only h264, hevc, vp8, vp9, av1 "
                           "and gif)",
                           name, codec != nullptr ? codec : "unknown");
    }
    if (par->width <= 0 || par->height <= 0) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: the video stream has no frame size ({}x{})", name, par->width,
                           par->height);
    }
    const std::uint64_t pixels = std::uint64_t(par->width) * std::uint64_t(par->height);
    if (pixels > limits.max_pixels) {
        return base::error(ErrorCode::kOutOfRange,
                           "{}: video frames of {}x{} = {} pixels exceed the limit of {} pixels "
                           "(VideoLimits::max_pixels)",
                           name, par->width, par->height, pixels, limits.max_pixels);
    }
    return {};
}

}  // namespace

base::Status VideoInput::open(std::span<const std::uint8_t> bytes, const VideoLimits& limits,
                              std::string_view name, DemuxedVideo* out) {
    QVL_TRY(open_container(bytes, name));
    QVL_ASSIGN_OR_RETURN(const int stream, video_stream(format_, name));
    const AVStream* s = format_->streams[stream];
    QVL_TRY(check_stream(s, limits, name));
    out->codecpar = s->codecpar;
    VideoInfo& info = out->info;
    info.width = s->codecpar->width;
    info.height = s->codecpar->height;
    info.container =
        std::string(format_->iformat->name == std::string_view("gif")             ? "gif"
                    : std::string_view(format_->iformat->name).starts_with("mov") ? "mp4"
                                                                                  : "webm");
    info.codec = avcodec_get_name(s->codecpar->codec_id);
    info.fps = stream_fps(s);
    if (!(info.fps > 0)) {
        return base::error(ErrorCode::kCorruptFile, "{}: the video stream has no frame rate", name);
    }
    QVL_TRY(read_packets(stream, limits, name, out));
    // HF's metadata is the container's frame count (PyAV's stream.frames); where the container
    // has none, the packets are the frames.
    info.total_frames = s->nb_frames > 0 ? s->nb_frames : std::int64_t(out->packets.size());
    if (info.total_frames <= 0 || out->packets.empty())
        return base::error(ErrorCode::kCorruptFile, "{}: the video stream has no frames", name);
    if (std::uint64_t(info.total_frames) > limits.max_stream_frames) {
        return base::error(ErrorCode::kOutOfRange,
                           "{}: the video has {} frames, over the limit of {} "
                           "(VideoLimits::max_stream_frames)",
                           name, info.total_frames, limits.max_stream_frames);
    }
    info.duration_s = double(info.total_frames) / info.fps;
    if (info.duration_s > limits.max_duration_s) {
        return base::error(ErrorCode::kOutOfRange,
                           "{}: the video lasts {:.1f} s, over the limit of {:.1f} s "
                           "(VideoLimits::max_duration_s)",
                           name, info.duration_s, limits.max_duration_s);
    }
    out->sorted_pts = presentation_order(*out);
    return {};
}

}  // namespace qvl::io::detail

namespace qvl::io {

bool looks_like_video(std::span<const std::byte> bytes) {
    const std::span<const std::uint8_t> b(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                          bytes.size());
    return detail::sniff(b, "").ok();
}

}  // namespace qvl::io
