// Internal to engine/io: the format decoders behind decode_image_into (image.h). Each
// expects the format already sniffed, checks the header's pixel count against limits.max_pixels
// before allocating, prefixes messages with `name`, and writes *out reusing its storage (on
// error *out may hold partial pixels: the caller empties it). jpeg_decode.cpp is the only includer
// of <jpeglib.h>, png_decode.cpp of <spng.h>, webp_decode.cpp of <webp/*.h>, gif_decode.cpp of
// <gif_lib.h>.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/image.h"

namespace qvl::io::detail {

base::Status decode_jpeg(std::span<const std::uint8_t> bytes, const ImageLimits& limits,
                         std::string_view name, Image* out);
base::Status decode_png(std::span<const std::uint8_t> bytes, const ImageLimits& limits,
                        std::string_view name, Image* out);
base::Status decode_webp(std::span<const std::uint8_t> bytes, const ImageLimits& limits,
                         std::string_view name, Image* out);
// The first frame only.
base::Status decode_gif(std::span<const std::uint8_t> bytes, const ImageLimits& limits,
                        std::string_view name, Image* out);

// Encodes RGB as a baseline 4:2:0 JPEG (libjpeg-turbo defaults, like PIL's save). Not used by
// the engine itself: benchmarks and tests generate their inputs with it. kInvalidArgument for a
// malformed image or quality outside 1..100.
base::Result<std::vector<std::uint8_t>> encode_jpeg(const Image& image, int quality);

// The kOutOfRange error every decoder returns for an image over the pixel limit.
base::Status too_many_pixels(std::string_view name, std::string_view format, std::uint64_t width,
                             std::uint64_t height, std::uint64_t max_pixels);

}  // namespace qvl::io::detail
