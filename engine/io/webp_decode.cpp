// WebP decoding with libwebp's animation decoder (first frame); the only includer of <webp/*.h>.
// PIL 9 opens every WebP (still or animated, lossy or lossless) through WebPAnimDecoder with
// its default RGBA output and reports mode RGBA when the container's alpha flag is set, RGB
// otherwise; transformers' convert_to_rgb then composites RGBA onto white. Decoding the same way
// gives PIL's pixels bit for bit: the first frame of an animation is that frame on a
// transparent canvas, as PIL shows it. The canvas size is checked from the header before the
// decoder allocates it.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <memory>

#include "base/huge_pages.h"
#include "io/image_decoders.h"

namespace qvl::io::detail {

using base::ErrorCode;

namespace {

struct AnimDecoderDeleter {
    void operator()(WebPAnimDecoder* dec) const { WebPAnimDecoderDelete(dec); }
};
using AnimDecoderPtr = std::unique_ptr<WebPAnimDecoder, AnimDecoderDeleter>;

// The RIFF header's size field says how long the file is: fewer bytes than that is truncation.
bool truncated(std::span<const std::uint8_t> b) {
    if (b.size() < 12) return true;
    const std::uint64_t riff = std::uint64_t(b[4]) | std::uint64_t(b[5]) << 8 |
                               std::uint64_t(b[6]) << 16 | std::uint64_t(b[7]) << 24;
    return b.size() < riff + 8;
}

base::Status webp_failure(std::string_view name, std::span<const std::uint8_t> b,
                          std::string_view what) {
    if (truncated(b)) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: truncated webp: the data ends before the image is complete", name);
    }
    return base::error(ErrorCode::kCorruptFile, "{}: corrupt webp: {}", name, what);
}

}  // namespace

base::Status decode_webp(std::span<const std::uint8_t> bytes, const ImageLimits& limits,
                         std::string_view name, Image* out) {
    WebPBitstreamFeatures features{};
    const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
    if (status == VP8_STATUS_UNSUPPORTED_FEATURE) {
        return base::error(ErrorCode::kUnsupported, "{}: webp: a feature libwebp does not support",
                           name);
    }
    if (status != VP8_STATUS_OK) return webp_failure(name, bytes, "the header does not parse");
    const std::uint64_t width = std::uint64_t(std::max(features.width, 0));
    const std::uint64_t height = std::uint64_t(std::max(features.height, 0));
    if (width * height > limits.max_pixels)
        return too_many_pixels(name, "webp", width, height, limits.max_pixels);

    const WebPData data{bytes.data(), bytes.size()};
    WebPAnimDecoderOptions options;
    if (!WebPAnimDecoderOptionsInit(&options)) {
        return base::error(ErrorCode::kInternal, "{}: webp: libwebp version mismatch", name);
    }
    options.color_mode = MODE_RGBA;
    options.use_threads = 0;
    AnimDecoderPtr dec(WebPAnimDecoderNew(&data, &options));
    if (!dec) return webp_failure(name, bytes, "the container does not parse");
    WebPAnimInfo info{};
    if (!WebPAnimDecoderGetInfo(dec.get(), &info) || info.canvas_width != width ||
        info.canvas_height != height || info.frame_count < 1) {
        return webp_failure(name, bytes, "the canvas disagrees with the header");
    }
    std::uint8_t* rgba = nullptr;
    int timestamp = 0;
    if (!WebPAnimDecoderGetNext(dec.get(), &rgba, &timestamp) || rgba == nullptr) {
        return webp_failure(name, bytes, "the first frame does not decode");
    }
    const WebPDemuxer* demux = WebPAnimDecoderGetDemuxer(dec.get());
    const bool alpha = (WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS) & ALPHA_FLAG) != 0;
    const std::size_t n = std::size_t(width * height);
    Image& image = *out;
    image.width = int(width);
    image.height = int(height);
    base::resize_reusing(image.rgb, 4 * n);
    std::memcpy(image.rgb.data(), rgba, 4 * n);
    if (alpha) {
        composite_on_white(image.rgb, n);
    } else {
        // PIL's mode RGB drops the channel ("RGBX"); writing pixel i at 3i never overtakes
        // reading pixel j >= i at 4j.
        for (std::size_t i = 0; i < n; ++i) std::memmove(&image.rgb[3 * i], &image.rgb[4 * i], 3);
    }
    image.rgb.resize(3 * n);  // shrinks: keeps the storage
    return {};
}

}  // namespace qvl::io::detail
