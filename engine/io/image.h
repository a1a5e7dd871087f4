// Image decoding: JPEG (libjpeg-turbo), PNG (libspng), WebP (libwebp) and GIF (giflib, first
// frame; io/gif_decode.cpp says how its palette and transparency map) into 8-bit RGB, the way the
// reference processor sees an image after PIL's `Image.open(...).convert("RGB")`:
//   - the format is sniffed from the bytes, never from the file name;
//   - transparency is composited onto opaque white, as transformers' convert_to_rgb does for a
//     PIL image (and Qwen's qwen-vl-utils): PNGs with an alpha channel (RGBA, grey + alpha) or
//     a tRNS chunk (palette alpha, RGB or grey colour keys, a grey key compared as PIL does),
//     WebPs with alpha, a GIF's transparent index;
//     grey is replicated to RGB, palettes are expanded, 1/2/4-bit samples are scaled to 0..255;
//   - 16-bit samples keep their high byte, except 16-bit grey without alpha, which PIL opens as
//     mode "I" and converts by clamping to 0..255;
//   - CMYK/YCCK JPEGs are converted with PIL's formula (Adobe-inverted data un-inverted first);
//   - no EXIF orientation and no gamma/colour management are applied (PIL does neither).
// Hostile input never crashes: the pixel count is checked from the header before any pixel
// memory is allocated, and every library failure becomes a Status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace qvl::io {

// An 8-bit RGB image, HWC, row-major, rgb.size() == width * height * 3.
struct Image {
    int width = 0;
    int height = 0;
    std::vector<std::uint8_t> rgb;
};

struct ImageLimits {
    std::uint64_t max_pixels = 16384ull * 16384;  // width * height, checked before allocation
    std::uint64_t max_file_bytes = 512ull << 20;
};

// Composites n RGBA pixels onto opaque white in place: pixels holds 4n bytes (R, G, B, A) and
// afterwards starts with the 3n bytes of the RGB result. Each channel becomes
// (c * a + 255 * (255 - a) + 127) / 255 in integers, bit-exact with PIL's
// Image.alpha_composite(white, rgba).convert("RGB") (and with pasting onto white through the
// alpha mask) for all 65536 (c, a) pairs (tests/data/images/check_alpha_composite.py).
void composite_on_white(std::span<std::uint8_t> pixels, std::size_t n);

// Decodes a JPEG, PNG, WebP or GIF held in memory. `name` (usually the file path) prefixes every
// message. Errors: empty, truncated or corrupt data -> kCorruptFile; another or an unknown format,
// or a JPEG feature libjpeg-turbo lacks -> kUnsupported; more than limits.max_pixels pixels or more
// than limits.max_file_bytes bytes -> kOutOfRange (the message names the limit).
base::Result<Image> decode_image(std::span<const std::byte> bytes, const ImageLimits& limits,
                                 std::string_view name);

// Maps the file and decodes it. A missing file -> kNotFound; unreadable -> kIo; a file larger
// than limits.max_file_bytes -> kOutOfRange (checked before reading); otherwise as decode_image.
base::Result<Image> load_image(const std::filesystem::path& path, const ImageLimits& limits);

// decode_image / load_image into *out, reusing out->rgb's storage when it is large enough: a
// program that decodes many images keeps one Image, and only an image larger than any before
// it allocates (and page-faults) new memory. Same pixels and errors as the functions above; on
// error *out is left empty (0x0, no pixels, storage kept).
base::Status decode_image_into(std::span<const std::byte> bytes, const ImageLimits& limits,
                               std::string_view name, Image* out);
base::Status load_image_into(const std::filesystem::path& path, const ImageLimits& limits,
                             Image* out);

}  // namespace qvl::io
