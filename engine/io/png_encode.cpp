// PNG encoding with libspng (the decoder is png_decode.cpp; each includes <spng.h> for its half).
#include "io/png_encode.h"

#include <spng.h>

#include <cstdlib>
#include <fstream>
#include <memory>

namespace qvl::io {

using base::ErrorCode;

namespace {

struct CtxDeleter {
    void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }  // spng_get_png_buffer hands over malloc'd
};

}  // namespace

base::Status write_png(const std::filesystem::path& path, const Image& image) {
    if (image.width < 1 || image.height < 1 ||
        image.rgb.size() != std::size_t(image.width) * image.height * 3) {
        return base::error(ErrorCode::kInvalidArgument,
                           "{}: cannot write a {}x{} image of {} bytes", path.string(), image.width,
                           image.height, image.rgb.size());
    }
    std::unique_ptr<spng_ctx, CtxDeleter> ctx(spng_ctx_new(SPNG_CTX_ENCODER));
    if (!ctx) return base::error(ErrorCode::kResourceExhausted, "png encoder: out of memory");
    spng_ihdr ihdr{};
    ihdr.width = std::uint32_t(image.width);
    ihdr.height = std::uint32_t(image.height);
    ihdr.bit_depth = 8;
    ihdr.color_type = SPNG_COLOR_TYPE_TRUECOLOR;
    int err = spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
    if (err == 0) err = spng_set_ihdr(ctx.get(), &ihdr);
    if (err == 0) {
        err = spng_encode_image(ctx.get(), image.rgb.data(), image.rgb.size(), SPNG_FMT_PNG,
                                SPNG_ENCODE_FINALIZE);
    }
    std::size_t len = 0;
    std::unique_ptr<void, FreeDeleter> png;
    if (err == 0) png.reset(spng_get_png_buffer(ctx.get(), &len, &err));
    if (err != 0 || !png) {
        return base::error(ErrorCode::kInternal, "{}: png encoding failed: {}", path.string(),
                           spng_strerror(err));
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(png.get()), std::streamsize(len));
    out.close();
    if (!out) return base::error(ErrorCode::kIo, "{}: cannot write the png file", path.string());
    return base::Status();
}

}  // namespace qvl::io
