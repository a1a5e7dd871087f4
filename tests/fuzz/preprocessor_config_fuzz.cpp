// Fuzzes the reader of preprocessor_config.json, model/image_preprocess.h load_preprocess_config.
// An accepted config must give smart_resize something it can compute for ordinary image sizes.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "image/image_preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static qvl::fuzz::MemFile file("preprocessor_config.json");
    file.write(data, size);
    qvl::base::Result<qvl::image::PreprocessConfig> c =
        qvl::image::load_preprocess_config(file.path());
    if (!c.ok()) {
        if (c.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    if (c->patch_size < 1 || c->merge_size < 1 || c->temporal_patch_size < 1 || c->min_pixels < 1 ||
        c->max_pixels < c->min_pixels) {
        qvl::fuzz::fail("accepted an out-of-range size");
    }
    for (float s : c->image_std) {
        if (!(s != 0.0f)) qvl::fuzz::fail("accepted a zero std");
    }
    const int factor = c->patch_size * c->merge_size;
    for (auto [h, w] : {std::pair{1, 1}, std::pair{480, 640}, std::pair{1, 200}}) {
        qvl::base::Result<std::pair<int, int>> r =
            qvl::image::smart_resize(h, w, factor, c->min_pixels, c->max_pixels);
        if (r.ok() && (r->first < factor || r->second < factor || r->first % factor != 0 ||
                       r->second % factor != 0)) {
            qvl::fuzz::fail("smart_resize gave a size that is not a positive multiple of factor");
        }
    }
    float lut[3][256];
    qvl::image::normalization_lut(c.value(), lut);
    return 0;
}
