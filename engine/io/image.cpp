#include "io/image.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "io/image_decoders.h"
#include "io/mapped_file.h"

namespace qvl::io {

using base::ErrorCode;

namespace {

bool starts_with(std::span<const std::uint8_t> bytes, std::string_view magic, std::size_t at = 0) {
    return bytes.size() >= at + magic.size() &&
           std::memcmp(bytes.data() + at, magic.data(), magic.size()) == 0;
}

// Names formats people commonly pass by mistake, so the message can say what the file is.
const char* other_format_name(std::span<const std::uint8_t> b) {
    if (starts_with(b, std::string_view("II*\0", 4)) ||
        starts_with(b, std::string_view("MM\0*", 4)))
        return "tiff";
    if (starts_with(b, "BM")) return "bmp";
    if (starts_with(b, std::string_view("\0\0\0", 3)) && starts_with(b, "ftyp", 4))
        return "heif/avif";
    if (starts_with(b, "\xff\x4f\xff\x51") || starts_with(b, std::string_view("\0\0\0\x0cjP", 6)))
        return "jpeg 2000";
    return nullptr;
}

}  // namespace

void composite_on_white(std::span<std::uint8_t> pixels, std::size_t n) {
    QVL_CHECK(pixels.size() >= 4 * n, "composite_on_white: fewer than 4n bytes");
    std::uint8_t* p = pixels.data();
    // Writing pixel i's RGB at 3i never overtakes reading pixel j >= i at 4j.
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned a = p[4 * i + 3];
        const unsigned white = 255 * (255 - a) + 127;
        const unsigned r = p[4 * i], g = p[4 * i + 1], b = p[4 * i + 2];
        p[3 * i] = std::uint8_t((r * a + white) / 255);
        p[3 * i + 1] = std::uint8_t((g * a + white) / 255);
        p[3 * i + 2] = std::uint8_t((b * a + white) / 255);
    }
}

namespace detail {

base::Status too_many_pixels(std::string_view name, std::string_view format, std::uint64_t width,
                             std::uint64_t height, std::uint64_t max_pixels) {
    return base::error(ErrorCode::kOutOfRange,
                       "{}: {} image of {}x{} = {} pixels exceeds the limit of {} pixels "
                       "(ImageLimits::max_pixels)",
                       name, format, width, height, width * height, max_pixels);
}

}  // namespace detail

namespace {

base::Status decode_sniffed(std::span<const std::byte> bytes, const ImageLimits& limits,
                            std::string_view name, Image* out) {
    const std::span<const std::uint8_t> b(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                          bytes.size());
    if (b.empty()) return base::error(ErrorCode::kCorruptFile, "{}: empty file (0 bytes)", name);
    if (b.size() > limits.max_file_bytes) {
        return base::error(ErrorCode::kOutOfRange,
                           "{}: {} bytes exceeds the image file limit of {} bytes", name, b.size(),
                           limits.max_file_bytes);
    }
    static constexpr std::string_view kPngSignature("\x89PNG\r\n\x1a\n", 8);
    if (starts_with(b, kPngSignature)) return detail::decode_png(b, limits, name, out);
    if (starts_with(b, "\xff\xd8\xff")) return detail::decode_jpeg(b, limits, name, out);
    if (starts_with(b, "GIF87a") || starts_with(b, "GIF89a"))
        return detail::decode_gif(b, limits, name, out);
    if (starts_with(b, "RIFF") && starts_with(b, "WEBP", 8))
        return detail::decode_webp(b, limits, name, out);
    if (b.size() < kPngSignature.size() &&
        std::memcmp(b.data(), kPngSignature.data(), b.size()) == 0) {
        return base::error(ErrorCode::kCorruptFile, "{}: truncated png: only {} bytes", name,
                           b.size());
    }
    if (const char* other = other_format_name(b)) {
        return base::error(ErrorCode::kUnsupported,
                           "{}: {} images are not supported (only jpeg, png, webp and gif)", name,
                           other);
    }
    std::string head;
    for (std::size_t i = 0; i < std::min<std::size_t>(b.size(), 4); ++i)
        head += fmt::format("{}{:02x}", i ? " " : "", b[i]);
    return base::error(ErrorCode::kUnsupported,
                       "{}: not a jpeg, png, webp or gif image (the file starts with bytes {})",
                       name, head);
}

}  // namespace

base::Status decode_image_into(std::span<const std::byte> bytes, const ImageLimits& limits,
                               std::string_view name, Image* out) {
    base::Status status = decode_sniffed(bytes, limits, name, out);
    if (!status.ok()) {
        out->width = out->height = 0;
        out->rgb.clear();
    }
    return status;
}

base::Result<Image> decode_image(std::span<const std::byte> bytes, const ImageLimits& limits,
                                 std::string_view name) {
    Image image;
    QVL_TRY(decode_image_into(bytes, limits, name, &image));
    return image;
}

base::Status load_image_into(const std::filesystem::path& path, const ImageLimits& limits,
                             Image* out) {
    out->width = out->height = 0;
    out->rgb.clear();
    const std::string name = path.string();
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > limits.max_file_bytes) {
        return base::error(ErrorCode::kOutOfRange,
                           "{}: {} bytes exceeds the image file limit of {} bytes", name, size,
                           limits.max_file_bytes);
    }
    QVL_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open_read_only(path));
    return decode_image_into(file.bytes(), limits, name, out);
}

base::Result<Image> load_image(const std::filesystem::path& path, const ImageLimits& limits) {
    Image image;
    QVL_TRY(load_image_into(path, limits, &image));
    return image;
}

}  // namespace qvl::io
