// The codec half of io/video.h: decodes the demuxed packets (io/video_demux.h), keeps the sampled
// frames and converts them to RGB the way PyAV's to_ndarray(format="rgb24") asks swscale to.
#include <algorithm>
#include <cstring>

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include "io/mapped_file.h"
#include "io/video.h"
#include "io/video_demux.h"

namespace qvl::io {

using base::ErrorCode;

namespace detail {
namespace {

// swscale's matrix for the stream's tag, as PyAV leaves it to swscale (untagged: BT.601).
int sws_colorspace(AVColorSpace cs) {
    switch (cs) {
        case AVCOL_SPC_BT709:
            return SWS_CS_ITU709;
        case AVCOL_SPC_FCC:
            return SWS_CS_FCC;
        case AVCOL_SPC_SMPTE240M:
            return SWS_CS_SMPTE240M;
        case AVCOL_SPC_BT2020_NCL:
        case AVCOL_SPC_BT2020_CL:
            return SWS_CS_BT2020;
        default:
            return SWS_CS_DEFAULT;
    }
}

bool full_range(const AVFrame* f) {
    switch (f->format) {
        case AV_PIX_FMT_YUVJ420P:
        case AV_PIX_FMT_YUVJ422P:
        case AV_PIX_FMT_YUVJ444P:
        case AV_PIX_FMT_YUVJ440P:
        case AV_PIX_FMT_YUVJ411P:
            return true;
        default:
            return f->color_range == AVCOL_RANGE_JPEG;
    }
}

// One decoder for the stream (frame-threaded when VideoLimits::threads > 1) and one cached RGB
// converter.
class FrameDecoder {
  public:
    FrameDecoder() = default;
    ~FrameDecoder() {
        sws_freeContext(sws_);
        av_frame_free(&frame_);
        avcodec_free_context(&ctx_);
    }
    FrameDecoder(const FrameDecoder&) = delete;
    FrameDecoder& operator=(const FrameDecoder&) = delete;

    base::Status open(const AVCodecParameters* par, const VideoLimits& limits, int threads,
                      std::string_view name);
    // The next decoded frame into frame(): true; the stream's end: false. A packet whose pts is
    // not in `wanted` (sorted; null: all wanted) is decoded only if other frames refer to it.
    base::Result<bool> next(const DemuxedVideo& d, std::size_t* next_packet,
                            const std::vector<std::int64_t>* wanted, std::string_view name);
    void restart() { avcodec_flush_buffers(ctx_); }
    const AVFrame* frame() const { return frame_; }
    std::int64_t decoded() const { return decoded_; }
    base::Status to_rgb(const VideoInfo& info, std::string_view name, Image* out);

  private:
    AVCodecContext* ctx_ = nullptr;
    AVFrame* frame_ = nullptr;
    SwsContext* sws_ = nullptr;
    bool drained_ = false;
    std::int64_t decoded_ = 0;
    std::vector<std::uint8_t> scratch_;
};

base::Status FrameDecoder::open(const AVCodecParameters* par, const VideoLimits& limits,
                                int threads, std::string_view name) {
    const AVCodec* codec = avcodec_find_decoder(par->codec_id);
    if (codec == nullptr) {
        return base::error(ErrorCode::kUnsupported, "{}: no decoder for video codec '{}'", name,
                           avcodec_get_name(par->codec_id));
    }
    ctx_ = avcodec_alloc_context3(codec);
    frame_ = av_frame_alloc();
    if (ctx_ == nullptr || frame_ == nullptr)
        return base::error(ErrorCode::kResourceExhausted, "{}: out of memory", name);
    int err = avcodec_parameters_to_context(ctx_, par);
    if (err >= 0) {
        // Frame threads never change a frame's bytes (libavcodec's decoders are bit-exact for
        // any count); GIF and codecs without frame threading simply run on one.
        ctx_->thread_count = threads;
        ctx_->thread_type = FF_THREAD_FRAME;
        // The decoder refuses larger frames itself (a size change inside the stream included).
        ctx_->max_pixels = std::int64_t(std::min<std::uint64_t>(limits.max_pixels, INT64_MAX));
        err = avcodec_open2(ctx_, codec, nullptr);
    }
    if (err < 0) {
        return base::error(ErrorCode::kCorruptFile, "{}: cannot open the {} decoder ({})", name,
                           codec->name, av_error_text(err));
    }
    return {};
}

base::Result<bool> FrameDecoder::next(const DemuxedVideo& d, std::size_t* next_packet,
                                      const std::vector<std::int64_t>* wanted,
                                      std::string_view name) {
    for (;;) {
        const int got = avcodec_receive_frame(ctx_, frame_);
        if (got == 0) {
            ++decoded_;
            return true;
        }
        if (got == AVERROR_EOF) return false;
        if (got != AVERROR(EAGAIN)) {
            return base::error(ErrorCode::kCorruptFile, "{}: corrupt video data ({})", name,
                               av_error_text(got));
        }
        if (*next_packet < d.packets.size()) {
            const std::size_t i = (*next_packet)++;
            // Frames nobody samples and nothing references need not be decoded at all (most
            // B-frames): the decoder reads this per packet (frame threads copy it per packet).
            const bool unwanted =
                wanted != nullptr &&
                !std::binary_search(wanted->begin(), wanted->end(), d.packets[i]->pts);
            ctx_->skip_frame = unwanted ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
            const int sent = avcodec_send_packet(ctx_, d.packets[i].get());
            if (sent < 0) {
                return base::error(ErrorCode::kCorruptFile,
                                   "{}: corrupt video data in frame packet {} ({})", name, i,
                                   av_error_text(sent));
            }
        } else if (!drained_) {
            drained_ = true;
            (void)avcodec_send_packet(ctx_, nullptr);  // flush the frames still held back
        } else {
            return false;
        }
    }
}

base::Status FrameDecoder::to_rgb(const VideoInfo& info, std::string_view name, Image* out) {
    const AVFrame* f = frame_;
    if (f->width != info.width || f->height != info.height) {
        return base::error(ErrorCode::kUnsupported,
                           "{}: a frame of {}x{} in a {}x{} video (size changes are not supported)",
                           name, f->width, f->height, info.width, info.height);
    }
    const auto format = static_cast<AVPixelFormat>(f->format);
    // PyAV's default interpolation flag; the sizes are equal, so only the conversion runs.
    sws_ = sws_getCachedContext(sws_, f->width, f->height, format, f->width, f->height,
                                AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
    if (sws_ == nullptr) {
        const char* fmt_name = av_get_pix_fmt_name(format);
        return base::error(ErrorCode::kUnsupported, "{}: pixel format '{}' cannot become RGB", name,
                           fmt_name != nullptr ? fmt_name : "unknown");
    }
    const int* coefficients = sws_getCoefficients(sws_colorspace(f->colorspace));
    sws_setColorspaceDetails(sws_, coefficients, full_range(f) ? 1 : 0, coefficients, 1, 0, 1 << 16,
                             1 << 16);
    // swscale's SIMD may write a little past a row's end: convert into padded rows, then pack.
    const std::size_t row = std::size_t(f->width) * 3;
    const std::size_t stride = (row + 63) / 64 * 64 + 64;
    scratch_.resize(stride * std::size_t(f->height + 1));
    std::uint8_t* dst[4] = {scratch_.data(), nullptr, nullptr, nullptr};
    const int dst_stride[4] = {int(stride), 0, 0, 0};
    sws_scale(sws_, f->data, f->linesize, 0, f->height, dst, dst_stride);
    out->width = f->width;
    out->height = f->height;
    out->rgb.resize(row * std::size_t(f->height));
    for (int y = 0; y < f->height; ++y)
        std::memcpy(out->rgb.data() + std::size_t(y) * row, scratch_.data() + y * stride, row);
    return {};
}

// The decode-order index of the last key frame whose pts is at most `pts`.
std::size_t key_packet_before(const DemuxedVideo& d, std::int64_t pts) {
    std::size_t best = 0;
    for (std::size_t i = 0; i < d.packets.size(); ++i) {
        const AVPacket* p = d.packets[i].get();
        if ((p->flags & AV_PKT_FLAG_KEY) != 0 && p->pts <= pts) best = i;
    }
    return best;
}

// Frame threads pay off on long runs of packets between decoder restarts. When the samples sit a
// few packets after their key frames (all-intra or short groups of pictures), the frames still in
// flight at every restart are wasted work: one thread then. `wanted` are the sampled pts, sorted.
int decoder_threads(const DemuxedVideo& d, const std::vector<std::int64_t>& wanted, int threads) {
    if (threads <= 1 || wanted.empty()) return 1;
    std::size_t fed = 0, runs = 1, next = 0;
    for (const std::int64_t pts : wanted) {
        const std::size_t key = key_packet_before(d, pts);
        if (key > next) {
            ++runs;
            next = key;
        }
        for (std::size_t i = next; i < d.packets.size(); ++i) {
            if (d.packets[i]->pts != pts) continue;
            fed += i + 1 - next;
            next = i + 1;
            break;
        }
    }
    return fed >= runs * 8 * std::size_t(threads) ? threads : 1;
}

// The frame's presentation rank source: its pts, as the packets carried it.
std::int64_t frame_pts(const AVFrame* f) {
    return f->pts != AV_NOPTS_VALUE ? f->pts : f->best_effort_timestamp;
}

}  // namespace

// Decodes the distinct sampled frames `ranks` (ascending) into frames[k]. With presentation
// timestamps, a frame whose group of pictures has not been fed yet starts the decoder afresh at
// the key frame before it: the groups in between are never decoded.
base::Status decode_ranks(const DemuxedVideo& d, const std::vector<std::int64_t>& ranks,
                          const VideoLimits& limits, std::string_view name,
                          std::vector<Image>* frames, std::int64_t* decoded) {
    const bool by_pts = !d.sorted_pts.empty();
    std::size_t next_packet = 0;
    std::int64_t counted = -1;         // output frames so far - 1, when frames are counted in order
    std::vector<std::int64_t> wanted;  // the sampled frames' pts, sorted
    if (by_pts) {
        for (const std::int64_t r : ranks) {
            if (std::size_t(r) < d.sorted_pts.size())
                wanted.push_back(d.sorted_pts[std::size_t(r)]);
        }
    }
    FrameDecoder decoder;
    const int threads = by_pts ? decoder_threads(d, wanted, limits.threads) : limits.threads;
    QVL_TRY(decoder.open(d.codecpar, limits, std::max(1, threads), name));
    frames->resize(ranks.size());
    auto missing = [&](std::int64_t rank) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: frame {} of the {} the container announces is missing "
                           "(truncated or corrupt video)",
                           name, rank, d.info.total_frames);
    };
    for (std::size_t k = 0; k < ranks.size(); ++k) {
        if (by_pts && std::size_t(ranks[k]) >= d.sorted_pts.size()) return missing(ranks[k]);
        const std::int64_t want = by_pts ? d.sorted_pts[std::size_t(ranks[k])] : ranks[k];
        if (by_pts) {
            const std::size_t key = key_packet_before(d, want);
            if (key > next_packet) {
                decoder.restart();
                next_packet = key;
            }
        }
        for (;;) {
            QVL_ASSIGN_OR_RETURN(const bool got,
                                 decoder.next(d, &next_packet, by_pts ? &wanted : nullptr, name));
            if (!got) return missing(ranks[k]);
            const std::int64_t id = by_pts ? frame_pts(decoder.frame()) : ++counted;
            if (id == want) break;
        }
        QVL_TRY(decoder.to_rgb(d.info, name, &(*frames)[k]));
        *decoded = decoder.decoded();
    }
    return {};
}

}  // namespace detail

namespace {

base::Status check_indices(const std::vector<std::int64_t>& indices, const VideoInfo& info,
                           const VideoLimits& limits, std::string_view name) {
    if (indices.empty())
        return base::error(ErrorCode::kInvalidArgument, "{}: no frames were sampled", name);
    if (indices.size() > limits.max_sampled_frames) {
        return base::error(ErrorCode::kOutOfRange,
                           "{}: {} sampled frames exceed the limit of {} "
                           "(VideoLimits::max_sampled_frames)",
                           name, indices.size(), limits.max_sampled_frames);
    }
    for (std::size_t k = 0; k < indices.size(); ++k) {
        if (indices[k] < 0 || indices[k] >= info.total_frames ||
            (k > 0 && indices[k] < indices[k - 1])) {
            return base::error(ErrorCode::kInvalidArgument,
                               "{}: sampled frame index {} at position {} is out of order or "
                               "outside [0, {})",
                               name, indices[k], k, info.total_frames);
        }
    }
    const std::uint64_t bytes =
        std::uint64_t(indices.size()) * std::uint64_t(info.width) * std::uint64_t(info.height) * 3;
    if (bytes > limits.max_decoded_bytes) {
        return base::error(ErrorCode::kOutOfRange,
                           "{}: {} sampled frames of {}x{} take {} bytes, over the limit of {} "
                           "(VideoLimits::max_decoded_bytes)",
                           name, indices.size(), info.width, info.height, bytes,
                           limits.max_decoded_bytes);
    }
    return {};
}

}  // namespace

base::Result<Video> decode_video(std::span<const std::byte> bytes, const VideoLimits& limits,
                                 std::string_view name, const FrameSampler& sample) {
    const std::span<const std::uint8_t> b(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                          bytes.size());
    if (b.size() > limits.max_file_bytes) {
        return base::error(ErrorCode::kOutOfRange,
                           "{}: {} bytes exceeds the video file limit of {} bytes", name, b.size(),
                           limits.max_file_bytes);
    }
    detail::VideoInput input;
    detail::DemuxedVideo demuxed;
    QVL_TRY(input.open(b, limits, name, &demuxed));
    Video video;
    video.info = demuxed.info;
    QVL_ASSIGN_OR_RETURN(video.indices, sample(video.info));
    QVL_TRY(check_indices(video.indices, video.info, limits, name));
    std::vector<std::int64_t> ranks = video.indices;
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    std::vector<Image> distinct;
    QVL_TRY(detail::decode_ranks(demuxed, ranks, limits, name, &distinct, &video.decoded_frames));
    video.frames.reserve(video.indices.size());
    std::size_t r = 0;
    for (std::size_t k = 0; k < video.indices.size(); ++k) {
        while (ranks[r] != video.indices[k]) ++r;
        const bool repeated = k + 1 < video.indices.size() && video.indices[k + 1] == ranks[r];
        video.frames.push_back(repeated ? distinct[r] : std::move(distinct[r]));
    }
    return video;
}

base::Result<Video> load_video(const std::filesystem::path& path, const VideoLimits& limits,
                               const FrameSampler& sample) {
    const std::string name = path.string();
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > limits.max_file_bytes) {
        return base::error(ErrorCode::kOutOfRange,
                           "{}: {} bytes exceeds the video file limit of {} bytes", name, size,
                           limits.max_file_bytes);
    }
    QVL_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open_read_only(path));
    return decode_video(file.bytes(), limits, name, sample);
}

}  // namespace qvl::io
