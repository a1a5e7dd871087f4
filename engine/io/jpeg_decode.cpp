// JPEG decoding (and, for benchmarks and tests, encoding) with libjpeg-turbo; the only includer
// of <jpeglib.h>. libjpeg reports fatal errors by calling error_exit, which must not return: it
// longjmps back into run_decoder / run_encoder, the two functions here that call setjmp. They
// hold only plain data (no C++ object with a destructor is created between setjmp and a
// longjmp); every C++ object lives in their callers.
#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

// jpeglib.h uses FILE and size_t without including their headers; jerror.h must follow it.
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include "base/huge_pages.h"
#include "io/image_decoders.h"

namespace qvl::io::detail {

using base::ErrorCode;

namespace {

// A progressive JPEG may hold any number of scans, each one a full pass over the coefficient
// buffer; libjpeg-turbo's own documentation suggests refusing absurd counts like this.
constexpr int kMaxScans = 1000;

enum class Outcome { kOk, kLibraryError, kTruncated, kTooManyScans, kNoImage, kTooManyPixels };

// libjpeg hands callbacks cinfo->err, which points at `manager`, the first member.
struct ErrorState {
    jpeg_error_mgr manager;
    jpeg_progress_mgr progress;
    std::jmp_buf jump;
    Outcome outcome;
    int msg_code;
    char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void fail(j_common_ptr cinfo, Outcome outcome) {
    auto* state = reinterpret_cast<ErrorState*>(cinfo->err);
    state->outcome = outcome;
    state->msg_code = cinfo->err->msg_code;
    (*cinfo->err->format_message)(cinfo, state->message);
    std::longjmp(state->jump, 1);
}

void on_error_exit(j_common_ptr cinfo) { fail(cinfo, Outcome::kLibraryError); }

// Warnings are ignored as PIL ignores them ("corrupt data: extraneous bytes"), except running
// out of data: libjpeg would pad with grey, PIL refuses with "image file is truncated".
void on_emit_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) fail(cinfo, Outcome::kTruncated);
    cinfo->err->num_warnings++;
}

void on_output_message(j_common_ptr /*cinfo*/) {}

void on_progress(j_common_ptr cinfo) {
    const auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
    if (d->input_scan_number > kMaxScans) fail(cinfo, Outcome::kTooManyScans);
}

// PIL opens every 4-component JPEG as Adobe-inverted CMYK ("CMYK;I") and converts with
// r = nk - nk*c/255 (rounded as Pillow's MULDIV255), nk = 255 - k.
inline std::uint8_t cmyk_channel(unsigned stored_c, unsigned stored_k) {
    const unsigned c = 255 - stored_c;
    const unsigned nk = stored_k;  // 255 - (255 - stored_k)
    const unsigned t = c * nk + 128;
    return static_cast<std::uint8_t>(nk - (((t >> 8) + t) >> 8));
}

void cmyk_row_to_rgb(const std::uint8_t* cmyk, std::uint8_t* rgb, std::size_t width) {
    for (std::size_t x = 0; x < width; ++x) {
        const std::uint8_t* p = cmyk + 4 * x;
        rgb[3 * x + 0] = cmyk_channel(p[0], p[3]);
        rgb[3 * x + 1] = cmyk_channel(p[1], p[3]);
        rgb[3 * x + 2] = cmyk_channel(p[2], p[3]);
    }
}

struct Header {
    std::uint64_t width;
    std::uint64_t height;
};

// The one function with setjmp. Locals assigned after setjmp are never read after a longjmp.
Outcome run_decoder(jpeg_decompress_struct* cinfo, ErrorState* state,
                    std::span<const std::uint8_t> bytes, std::uint64_t max_pixels, Header* header,
                    Image* image, std::vector<std::uint8_t>* cmyk_row) {
    if (setjmp(state->jump) != 0) return state->outcome;
    jpeg_create_decompress(cinfo);
    cinfo->progress = &state->progress;
    jpeg_mem_src(cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
    if (jpeg_read_header(cinfo, TRUE) != JPEG_HEADER_OK) return Outcome::kNoImage;
    header->width = cinfo->image_width;
    header->height = cinfo->image_height;
    if (header->width * header->height > max_pixels) return Outcome::kTooManyPixels;
    const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
    // Grey, YCbCr and RGB all convert to RGB inside libjpeg-turbo, as PIL's "L" -> "RGB"
    // replication and its YCbCr decode do; an unknown colour space makes libjpeg fail cleanly.
    cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(cinfo);
    const std::size_t width = cinfo->output_width;
    image->width = static_cast<int>(cinfo->output_width);
    image->height = static_cast<int>(cinfo->output_height);
    base::resize_reusing(image->rgb, width * cinfo->output_height * 3);
    if (cmyk) cmyk_row->resize(width * 4);
    // Several rows per call: libjpeg-turbo then color-converts straight into the image.
    constexpr unsigned kRowsPerCall = 16;
    JSAMPROW rows[kRowsPerCall];
    while (cinfo->output_scanline < cinfo->output_height) {
        const std::size_t y = cinfo->output_scanline;
        const unsigned n =
            cmyk ? 1
                 : std::min<unsigned>(kRowsPerCall, cinfo->output_height - cinfo->output_scanline);
        for (unsigned i = 0; i < n; ++i)
            rows[i] = cmyk ? cmyk_row->data() : image->rgb.data() + (y + i) * width * 3;
        if (jpeg_read_scanlines(cinfo, rows, n) == 0) return Outcome::kTruncated;
        if (cmyk) cmyk_row_to_rgb(cmyk_row->data(), image->rgb.data() + y * width * 3, width);
    }
    // jpeg_finish_decompress is skipped: the pixels are complete and what follows the image
    // data does not matter (the guard in the caller releases libjpeg's memory).
    return Outcome::kOk;
}

ErrorCode library_error_code(int msg_code) {
    switch (msg_code) {
        case JERR_BAD_PRECISION:
        case JERR_NOT_COMPILED:
        case JERR_ARITH_NOTIMPL:
        case JERR_CONVERSION_NOTIMPL:
        case JERR_IMAGE_TOO_BIG:
            return ErrorCode::kUnsupported;
        case JERR_OUT_OF_MEMORY:
            return ErrorCode::kResourceExhausted;
        default:
            return ErrorCode::kCorruptFile;
    }
}

// The encoder's setjmp function, under the same rules as run_decoder. `out`/`out_size` are
// filled by jpeg_mem_dest (malloc'd by libjpeg, freed by the caller).
Outcome run_encoder(jpeg_compress_struct* cinfo, ErrorState* state, const Image& image, int quality,
                    unsigned char** out, unsigned long* out_size) {
    if (setjmp(state->jump) != 0) return state->outcome;
    jpeg_create_compress(cinfo);
    jpeg_mem_dest(cinfo, out, out_size);
    cinfo->image_width = static_cast<JDIMENSION>(image.width);
    cinfo->image_height = static_cast<JDIMENSION>(image.height);
    cinfo->input_components = 3;
    cinfo->in_color_space = JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, quality, TRUE);
    jpeg_start_compress(cinfo, TRUE);
    const std::size_t stride = std::size_t(image.width) * 3;
    while (cinfo->next_scanline < cinfo->image_height) {
        // libjpeg's API is not const-correct; it only reads the rows.
        JSAMPROW row = const_cast<std::uint8_t*>(image.rgb.data()) + cinfo->next_scanline * stride;
        jpeg_write_scanlines(cinfo, &row, 1);
    }
    jpeg_finish_compress(cinfo);
    return Outcome::kOk;
}

struct CompressGuard {
    jpeg_compress_struct* cinfo;
    unsigned char** buffer;
    ~CompressGuard() {
        jpeg_destroy_compress(cinfo);
        std::free(*buffer);  // NOLINT: allocated by libjpeg's jpeg_mem_dest with malloc
    }
};

struct DecompressGuard {
    jpeg_decompress_struct* cinfo;
    ~DecompressGuard() { jpeg_destroy_decompress(cinfo); }
};

}  // namespace

base::Status decode_jpeg(std::span<const std::uint8_t> bytes, const ImageLimits& limits,
                         std::string_view name, Image* out) {
    std::vector<std::uint8_t> cmyk_row;
    ErrorState state{};
    jpeg_decompress_struct cinfo{};
    cinfo.err = jpeg_std_error(&state.manager);
    state.manager.error_exit = on_error_exit;
    state.manager.emit_message = on_emit_message;
    state.manager.output_message = on_output_message;
    state.progress.progress_monitor = on_progress;
    Header header{};
    DecompressGuard guard{&cinfo};  // jpeg_destroy of a never-created (zeroed) struct is a no-op
    const Outcome outcome =
        run_decoder(&cinfo, &state, bytes, limits.max_pixels, &header, out, &cmyk_row);
    switch (outcome) {
        case Outcome::kOk:
            return {};
        case Outcome::kTooManyPixels:
            return too_many_pixels(name, "jpeg", header.width, header.height, limits.max_pixels);
        case Outcome::kTruncated:
            return base::error(ErrorCode::kCorruptFile,
                               "{}: truncated jpeg: the data ends before the image is complete "
                               "({} bytes)",
                               name, bytes.size());
        case Outcome::kTooManyScans:
            return base::error(ErrorCode::kCorruptFile,
                               "{}: corrupt jpeg: more than {} progressive scans", name, kMaxScans);
        case Outcome::kNoImage:
            return base::error(ErrorCode::kCorruptFile, "{}: corrupt jpeg: no image in the data",
                               name);
        case Outcome::kLibraryError:
            break;
    }
    const ErrorCode code = library_error_code(state.msg_code);
    return base::error(code, "{}: {} jpeg: {}", name,
                       code == ErrorCode::kCorruptFile ? "corrupt" : "unsupported",
                       static_cast<const char*>(state.message));
}

base::Result<std::vector<std::uint8_t>> encode_jpeg(const Image& image, int quality) {
    if (image.width <= 0 || image.height <= 0 || quality < 1 || quality > 100 ||
        image.rgb.size() != std::size_t(image.width) * image.height * 3) {
        return base::error(ErrorCode::kInvalidArgument,
                           "encode_jpeg: bad image {}x{} ({} bytes) or quality {}", image.width,
                           image.height, image.rgb.size(), quality);
    }
    ErrorState state{};
    jpeg_compress_struct cinfo{};
    cinfo.err = jpeg_std_error(&state.manager);
    state.manager.error_exit = on_error_exit;
    state.manager.output_message = on_output_message;
    unsigned char* buffer = nullptr;
    unsigned long size = 0;
    CompressGuard guard{&cinfo, &buffer};
    if (run_encoder(&cinfo, &state, image, quality, &buffer, &size) != Outcome::kOk) {
        return base::error(ErrorCode::kInternal, "encode_jpeg: {}",
                           static_cast<const char*>(state.message));
    }
    return std::vector<std::uint8_t>(buffer, buffer + size);
}

}  // namespace qvl::io::detail
