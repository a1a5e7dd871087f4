// Fuzzes io/image.h decode_image (JPEG, PNG, WebP and GIF, sniffed from the bytes) and, for what
// decodes, model/image_preprocess.h preprocess_image. Pixel limits are small so one input stays
// fast and memory stays bounded; the output shapes must agree with each other.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_util.h"
#include "image/image_preprocess.h"
#include "io/image.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    qvl::io::ImageLimits limits;
    limits.max_pixels = 2048ull * 2048;
    limits.max_file_bytes = 1u << 20;
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    qvl::base::Result<qvl::io::Image> img = qvl::io::decode_image(bytes, limits, "fuzz image");
    if (!img.ok()) {
        if (img.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    if (img->width < 1 || img->height < 1 ||
        std::uint64_t(img->width) * std::uint64_t(img->height) > limits.max_pixels ||
        img->rgb.size() != std::size_t(img->width) * std::size_t(img->height) * 3) {
        qvl::fuzz::fail("decoded image size disagrees with its pixels");
    }
    qvl::image::PreprocessConfig config;
    config.min_pixels = 32 * 32;
    config.max_pixels = 256 * 256;
    qvl::base::Result<qvl::image::PreprocessedImage> pre =
        qvl::image::preprocess_image(img.value(), config);
    if (!pre.ok()) {
        if (pre.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    const std::size_t rows = std::size_t(pre->grid_t) * pre->grid_h * pre->grid_w;
    const std::size_t row =
        std::size_t(3) * config.temporal_patch_size * config.patch_size * config.patch_size;
    if (pre->pixel_values.size() != rows * row ||
        pre->grid_h * config.patch_size != pre->resized_height) {
        qvl::fuzz::fail("pixel_values shape disagrees with the grid");
    }
    // HF's smart_resize may overshoot max_pixels, but only when it clamps the short side up to
    // one factor (aspect ratios near 200).
    const int factor = config.patch_size * config.merge_size;
    if (std::int64_t(pre->resized_height) * pre->resized_width > config.max_pixels &&
        std::min(pre->resized_height, pre->resized_width) != factor) {
        qvl::fuzz::fail("resized image over max_pixels without a clamped side");
    }
    return 0;
}
