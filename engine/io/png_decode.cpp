// PNG decoding with libspng; the only includer of <spng.h>.
#include <spng.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "base/huge_pages.h"
#include "io/image_decoders.h"

namespace qvl::io::detail {

using base::ErrorCode;

namespace {

// Ancillary chunks (text, ICC profiles) are never used; bound what libspng may buffer for them.
constexpr std::size_t kMaxChunkBytes = 16u << 20;
constexpr std::size_t kMaxChunkCacheBytes = 64u << 20;

struct CtxDeleter {
    void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
using CtxPtr = std::unique_ptr<spng_ctx, CtxDeleter>;

base::Status spng_failure(std::string_view name, int err) {
    // Running out of data is SPNG_IO_EOF from the buffer reader (SPNG_EOF in some paths).
    if (err == SPNG_IO_EOF || err == SPNG_EOF || err == SPNG_EIDAT_TOO_SHORT) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: truncated png: the data ends before the image is complete", name);
    }
    if (err == SPNG_EMEM) {
        return base::error(ErrorCode::kResourceExhausted, "{}: png: {}", name, spng_strerror(err));
    }
    return base::error(ErrorCode::kCorruptFile, "{}: corrupt png: {}", name, spng_strerror(err));
}

}  // namespace

base::Status decode_png(std::span<const std::uint8_t> bytes, const ImageLimits& limits,
                        std::string_view name, Image* out) {
    CtxPtr ctx(spng_ctx_new(0));
    if (!ctx) return base::error(ErrorCode::kResourceExhausted, "{}: png: out of memory", name);
    // CRC errors are fatal in every chunk (libspng's default; PIL refuses them too).
    if (int err = spng_set_chunk_limits(ctx.get(), kMaxChunkBytes, kMaxChunkCacheBytes))
        return spng_failure(name, err);
    if (int err = spng_set_png_buffer(ctx.get(), bytes.data(), bytes.size()))
        return spng_failure(name, err);
    spng_ihdr ihdr{};
    if (int err = spng_get_ihdr(ctx.get(), &ihdr)) return spng_failure(name, err);
    const std::uint64_t width = ihdr.width;
    const std::uint64_t height = ihdr.height;
    if (width * height > limits.max_pixels)
        return too_many_pixels(name, "png", width, height, limits.max_pixels);

    // 16-bit grey without alpha is PIL mode "I", whose conversion to RGB clamps each sample to
    // 0..255 instead of keeping the high byte. An alpha channel, palette alpha or an RGB colour
    // key decodes to RGBA8 (high byte of 16-bit samples) and is composited onto white;
    // everything else goes through libspng's RGB8 (low bit depths scaled, palette expanded).
    const bool gray = ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE;
    const bool gray16 = gray && ihdr.bit_depth == 16;
    spng_trns trns{};
    const bool has_trns = spng_get_trns(ctx.get(), &trns) == 0;
    const bool has_alpha = ihdr.color_type == SPNG_COLOR_TYPE_TRUECOLOR_ALPHA ||
                           ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA ||
                           (has_trns && !gray);
    // A grey colour key whitens the pixels equal to it, compared as PIL does: with the 8-bit
    // value for 1/2/4-bit samples (scaled, while the key is not, so a 2-bit key 2 matches
    // nothing) and with the raw sample at 8 and 16 bits.
    const int gray_key = gray && has_trns ? int(trns.gray) : -1;
    const int fmt = gray16 ? SPNG_FMT_RAW : (has_alpha ? SPNG_FMT_RGBA8 : SPNG_FMT_RGB8);
    const int channels = gray16 ? 2 : (has_alpha ? 4 : 3);  // bytes per pixel
    std::size_t decoded_size = 0;
    if (int err = spng_decoded_image_size(ctx.get(), fmt, &decoded_size))
        return spng_failure(name, err);
    const std::uint64_t expected = width * height * channels;
    if (decoded_size != expected) {
        return base::error(ErrorCode::kInternal,
                           "{}: png: libspng reports {} decoded bytes for {}x{}, expected {}", name,
                           decoded_size, width, height, expected);
    }
    Image& image = *out;
    image.width = static_cast<int>(width);
    image.height = static_cast<int>(height);
    if (!gray16) {
        base::resize_reusing(image.rgb, decoded_size);
        const int flags = has_alpha ? SPNG_DECODE_TRNS : 0;
        if (int err = spng_decode_image(ctx.get(), image.rgb.data(), decoded_size, fmt, flags))
            return spng_failure(name, err);
        if (has_alpha) {
            composite_on_white(image.rgb, std::size_t(width * height));
            image.rgb.resize(std::size_t(width * height * 3));  // shrinks: keeps the storage
        }
        for (std::size_t i = 0; gray_key >= 0 && i < width * height; ++i) {
            if (image.rgb[3 * i] == gray_key)
                image.rgb[3 * i] = image.rgb[3 * i + 1] = image.rgb[3 * i + 2] = 255;
        }
        return {};
    }
    std::vector<std::uint8_t> raw(decoded_size);
    if (int err = spng_decode_image(ctx.get(), raw.data(), decoded_size, fmt, 0))
        return spng_failure(name, err);
    base::resize_reusing(image.rgb, std::size_t(width * height * 3));
    for (std::size_t i = 0; i < width * height; ++i) {
        const unsigned v = (unsigned(raw[2 * i]) << 8) | raw[2 * i + 1];  // big-endian
        const auto g =
            int(v) == gray_key ? std::uint8_t(255) : static_cast<std::uint8_t>(std::min(v, 255u));
        image.rgb[3 * i] = image.rgb[3 * i + 1] = image.rgb[3 * i + 2] = g;
    }
    return {};
}

}  // namespace qvl::io::detail
