// GIF decoding with giflib (first frame only); the only includer of <gif_lib.h>. The pixels are
// what PIL 9's GifImagePlugin gives for frame 0 after transformers' convert_to_rgb:
//   - the canvas is the logical screen, grown to hold the frame if the frame reaches past it;
//   - outside the frame the canvas holds index 0, or the transparent index when the frame's
//     graphic control extension names one;
//   - index i is the frame's palette entry i (local, else global), or grey (i, i, i) when the
//     palette has no entry i or there is no palette at all (PIL's mode "L");
//   - the transparent index becomes white (composited onto white).
// Records are read one at a time up to the first image: the other frames of an animation are
// never decoded, and the canvas size is checked against the pixel limit before any allocation.
#include <gif_lib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "base/huge_pages.h"
#include "io/image_decoders.h"

namespace qvl::io::detail {

using base::ErrorCode;

namespace {

constexpr int kGraphicControl = 0xF9;

struct Reader {
    std::span<const std::uint8_t> bytes;
    std::size_t at = 0;
};

int read_bytes(GifFileType* gif, GifByteType* out, int n) {
    auto* r = static_cast<Reader*>(gif->UserData);
    const std::size_t take = std::min(std::size_t(std::max(n, 0)), r->bytes.size() - r->at);
    std::memcpy(out, r->bytes.data() + r->at, take);
    r->at += take;
    return int(take);
}

struct GifCloser {
    void operator()(GifFileType* gif) const {
        int error = 0;
        DGifCloseFile(gif, &error);
    }
};
using GifPtr = std::unique_ptr<GifFileType, GifCloser>;

// giflib names the step that failed, not why: a failure after every byte was read is
// truncation.
base::Status gif_failure(std::string_view name, const Reader& reader, int error) {
    if (error == D_GIF_ERR_NOT_ENOUGH_MEM) {
        return base::error(ErrorCode::kResourceExhausted, "{}: gif: out of memory", name);
    }
    if (reader.at == reader.bytes.size() || error == D_GIF_ERR_EOF_TOO_SOON) {
        return base::error(ErrorCode::kCorruptFile,
                           "{}: truncated gif: the data ends before the first frame is complete",
                           name);
    }
    const char* what = GifErrorString(error);
    return base::error(ErrorCode::kCorruptFile, "{}: corrupt gif: {}", name,
                       what != nullptr ? what : "unknown error");
}

base::Status gif_failure(std::string_view name, const GifFileType* gif) {
    return gif_failure(name, *static_cast<const Reader*>(gif->UserData), gif->Error);
}

// The first frame's descriptor (its palette and rectangle in gif->Image) and its transparent
// index (-1: none): the last graphic control extension before it, as PIL reads it.
base::Status find_first_frame(GifFileType* gif, std::string_view name, int* transparent) {
    *transparent = -1;
    for (;;) {
        GifRecordType type = UNDEFINED_RECORD_TYPE;
        if (DGifGetRecordType(gif, &type) == GIF_ERROR) return gif_failure(name, gif);
        if (type == TERMINATE_RECORD_TYPE) {
            return base::error(ErrorCode::kCorruptFile, "{}: gif holds no image", name);
        }
        if (type == IMAGE_DESC_RECORD_TYPE) {
            if (DGifGetImageDesc(gif) == GIF_ERROR) return gif_failure(name, gif);
            return {};
        }
        if (type != EXTENSION_RECORD_TYPE) continue;
        int code = 0;
        GifByteType* block = nullptr;
        if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) return gif_failure(name, gif);
        // block[0] is the sub-block's length; a graphic control block is flags, delay (2),
        // transparent index.
        if (code == kGraphicControl && block != nullptr && block[0] >= 4 && (block[1] & 1) != 0) {
            *transparent = block[4];
        }
        while (block != nullptr) {
            if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) return gif_failure(name, gif);
        }
    }
}

// Reads the frame's rows (in interlaced order when it is interlaced) into canvas at its place.
base::Status read_frame(GifFileType* gif, std::string_view name, int canvas_width,
                        std::vector<std::uint8_t>& canvas) {
    const GifImageDesc& d = gif->Image;
    if (d.Width <= 0 || d.Height <= 0) return {};  // an empty frame: the canvas stays background
    std::vector<GifPixelType> line(std::size_t(d.Width));
    auto read_row = [&](int y) -> base::Status {
        if (DGifGetLine(gif, line.data(), d.Width) == GIF_ERROR) return gif_failure(name, gif);
        std::memcpy(canvas.data() + std::size_t(d.Top + y) * canvas_width + d.Left, line.data(),
                    line.size());
        return {};
    };
    if (!d.Interlace) {
        for (int y = 0; y < d.Height; ++y) QVL_TRY(read_row(y));
        return {};
    }
    static constexpr std::array<int, 4> kStart = {0, 4, 2, 1}, kStep = {8, 8, 4, 2};
    for (int pass = 0; pass < 4; ++pass) {
        for (int y = kStart[pass]; y < d.Height; y += kStep[pass]) QVL_TRY(read_row(y));
    }
    return {};
}

}  // namespace

base::Status decode_gif(std::span<const std::uint8_t> bytes, const ImageLimits& limits,
                        std::string_view name, Image* out) {
    Reader reader{bytes};
    int error = 0;
    GifPtr gif(DGifOpen(&reader, read_bytes, &error));
    if (!gif) return gif_failure(name, reader, error);
    int transparent = -1;
    QVL_TRY(find_first_frame(gif.get(), name, &transparent));
    const GifImageDesc& d = gif->Image;
    const std::uint64_t width =
        std::max<std::uint64_t>(gif->SWidth, std::uint64_t(d.Left) + d.Width);
    const std::uint64_t height =
        std::max<std::uint64_t>(gif->SHeight, std::uint64_t(d.Top) + d.Height);
    if (width * height > limits.max_pixels)
        return too_many_pixels(name, "gif", width, height, limits.max_pixels);
    if (width == 0 || height == 0) {
        return base::error(ErrorCode::kCorruptFile, "{}: gif image of {}x{} pixels", name, width,
                           height);
    }
    std::vector<std::uint8_t> canvas(width * height, std::uint8_t(std::max(transparent, 0)));
    QVL_TRY(read_frame(gif.get(), name, int(width), canvas));

    const ColorMapObject* map = d.ColorMap != nullptr ? d.ColorMap : gif->SColorMap;
    std::array<std::array<std::uint8_t, 3>, 256> colour{};
    for (int i = 0; i < 256; ++i) {
        if (map != nullptr && i < map->ColorCount) {
            colour[i] = {map->Colors[i].Red, map->Colors[i].Green, map->Colors[i].Blue};
        } else {
            colour[i] = {std::uint8_t(i), std::uint8_t(i), std::uint8_t(i)};
        }
    }
    if (transparent >= 0) colour[std::size_t(transparent)] = {255, 255, 255};
    Image& image = *out;
    image.width = int(width);
    image.height = int(height);
    base::resize_reusing(image.rgb, std::size_t(width * height * 3));
    for (std::size_t i = 0; i < canvas.size(); ++i) {
        std::memcpy(image.rgb.data() + 3 * i, colour[canvas[i]].data(), 3);
    }
    return {};
}

}  // namespace qvl::io::detail
