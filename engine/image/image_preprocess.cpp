#include "image/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/huge_pages.h"
#include "image/image_resize.h"
#include "io/json.h"
#include "kernels/kernel_table.h"

namespace qvl::image {

using base::ErrorCode;

namespace {

// One key of preprocessor_config.json; `what` is "<file>: key '<name>'" for messages.
base::Status read_int(const io::JsonValue& value, const std::string& what, std::int64_t lo,
                      std::int64_t hi, std::int64_t* out) {
    if (!value.is_integer() || value.as_int() < lo || value.as_int() > hi) {
        return base::error(ErrorCode::kInvalidArgument, "{}: expected an integer in [{}, {}]", what,
                           lo, hi);
    }
    *out = value.as_int();
    return {};
}

// image_mean / image_std: three numbers, or one for all channels (HF accepts both).
base::Status read_triple(const io::JsonValue& value, const std::string& what, bool nonzero,
                         float out[3]) {
    const bool one = value.is_number();
    if (!one && !(value.is_array() && value.items().size() == 3)) {
        return base::error(ErrorCode::kInvalidArgument, "{}: expected 3 numbers or one number",
                           what);
    }
    for (int c = 0; c < 3; ++c) {
        const io::JsonValue& v = one ? value : value.items()[c];
        // A std below 1e-6 is a typo, not a scale: it would turn 1/std into inf or into a float
        // that underflows to zero (1e-300 is non-zero as a double but 0 as a float).
        if (!v.is_number() || !std::isfinite(v.as_double()) || std::fabs(v.as_double()) > 1e6 ||
            (nonzero && std::fabs(v.as_double()) < 1e-6)) {
            return base::error(ErrorCode::kInvalidArgument, "{}: expected finite{} numbers", what,
                               nonzero ? " with magnitude in [1e-6, 1e6]" : "");
        }
        out[c] = static_cast<float>(v.as_double());
    }
    return {};
}

base::Status require_enabled(const io::JsonValue& root, const std::string& file, const char* key) {
    const io::JsonValue* v = root.find(key);
    if (v == nullptr) return {};
    if (!v->is_bool())
        return base::error(ErrorCode::kInvalidArgument, "{}: key '{}': expected a boolean", file,
                           key);
    if (!v->as_bool()) {
        return base::error(ErrorCode::kUnsupported, "{}: key '{}': false is not supported", file,
                           key);
    }
    return {};
}

}  // namespace

base::Result<PreprocessConfig> load_preprocess_config(const std::filesystem::path& path) {
    PreprocessConfig config;
    auto parsed = io::read_json_file(path);
    if (!parsed.ok() && parsed.status().code() == ErrorCode::kNotFound) return config;
    if (!parsed.ok()) return parsed.status();
    const io::JsonValue& root = parsed.value();
    const std::string file = path.string();
    if (!root.is_object())
        return base::error(ErrorCode::kInvalidArgument, "{}: expected a json object", file);
    auto key = [&](const char* k) { return fmt::format("{}: key '{}'", file, k); };

    constexpr std::int64_t kMaxPixelsBound = std::int64_t(1) << 40;
    std::int64_t v = 0;
    // Precedence as in HF: top-level min_pixels/max_pixels over size.shortest_edge/longest_edge
    // (the older size.min_pixels/max_pixels spelling is read too).
    if (const io::JsonValue* size = root.find("size")) {
        if (!size->is_object())
            return base::error(ErrorCode::kInvalidArgument, "{}: expected an object", key("size"));
        for (const char* k : {"min_pixels", "shortest_edge"}) {
            if (const io::JsonValue* e = size->find(k)) {
                QVL_TRY(read_int(*e, key(k), 1, kMaxPixelsBound, &v));
                config.min_pixels = v;
            }
        }
        for (const char* k : {"max_pixels", "longest_edge"}) {
            if (const io::JsonValue* e = size->find(k)) {
                QVL_TRY(read_int(*e, key(k), 1, kMaxPixelsBound, &v));
                config.max_pixels = v;
            }
        }
    }
    if (const io::JsonValue* e = root.find("min_pixels"); e && !e->is_null()) {
        QVL_TRY(read_int(*e, key("min_pixels"), 1, kMaxPixelsBound, &v));
        config.min_pixels = v;
    }
    if (const io::JsonValue* e = root.find("max_pixels"); e && !e->is_null()) {
        QVL_TRY(read_int(*e, key("max_pixels"), 1, kMaxPixelsBound, &v));
        config.max_pixels = v;
    }
    if (config.max_pixels < config.min_pixels) {
        return base::error(ErrorCode::kInvalidArgument,
                           "{}: max_pixels {} (size.longest_edge) is below min_pixels {} "
                           "(size.shortest_edge)",
                           file, config.max_pixels, config.min_pixels);
    }
    struct IntKey {
        const char* name;
        int* field;
        std::int64_t hi;
    };
    for (const IntKey& k : {IntKey{"patch_size", &config.patch_size, 1024},
                            IntKey{"temporal_patch_size", &config.temporal_patch_size, 16},
                            IntKey{"merge_size", &config.merge_size, 16}}) {
        if (const io::JsonValue* e = root.find(k.name)) {
            QVL_TRY(read_int(*e, key(k.name), 1, k.hi, &v));
            *k.field = static_cast<int>(v);
        }
    }
    if (const io::JsonValue* e = root.find("image_mean"))
        QVL_TRY(read_triple(*e, key("image_mean"), false, config.image_mean));
    if (const io::JsonValue* e = root.find("image_std"))
        QVL_TRY(read_triple(*e, key("image_std"), true, config.image_std));
    for (const char* k : {"do_resize", "do_rescale", "do_normalize"})
        QVL_TRY(require_enabled(root, file, k));
    if (const io::JsonValue* e = root.find("rescale_factor")) {
        if (!e->is_number() || std::fabs(e->as_double() * 255.0 - 1.0) > 1e-9) {
            return base::error(ErrorCode::kUnsupported, "{}: only 1/255 is supported",
                               key("rescale_factor"));
        }
    }
    return config;
}

base::Result<std::pair<int, int>> smart_resize(int height, int width, int factor,
                                               std::int64_t min_pixels, std::int64_t max_pixels) {
    if (height <= 0 || width <= 0 || factor <= 0) {
        return base::error(ErrorCode::kInvalidArgument,
                           "image of {}x{} (width x height) cannot be resized with factor {}",
                           width, height, factor);
    }
    const double ratio = double(std::max(height, width)) / double(std::min(height, width));
    if (ratio > 200) {
        return base::error(ErrorCode::kInvalidArgument,
                           "image of {}x{} (width x height) has an aspect ratio of {:.4g}, over "
                           "the limit of 200",
                           width, height, ratio);
    }
    // Python's round() is round-half-to-even, which nearbyint does in the default FP mode.
    const std::int64_t f = factor;
    std::int64_t h_bar = std::int64_t(std::nearbyint(double(height) / double(f))) * f;
    std::int64_t w_bar = std::int64_t(std::nearbyint(double(width) / double(f))) * f;
    const double area = double(std::int64_t(height) * width);
    if (h_bar * w_bar > max_pixels) {
        const double beta = std::sqrt(area / double(max_pixels));
        h_bar = std::max(f, std::int64_t(std::floor(double(height) / beta / double(f))) * f);
        w_bar = std::max(f, std::int64_t(std::floor(double(width) / beta / double(f))) * f);
    } else if (h_bar * w_bar < min_pixels) {
        const double beta = std::sqrt(double(min_pixels) / area);
        h_bar = std::int64_t(std::ceil(double(height) * beta / double(f))) * f;
        w_bar = std::int64_t(std::ceil(double(width) * beta / double(f))) * f;
    }
    if (h_bar < f || w_bar < f || h_bar > std::numeric_limits<int>::max() ||
        w_bar > std::numeric_limits<int>::max()) {
        return base::error(ErrorCode::kInvalidArgument,
                           "image of {}x{} (width x height) resizes to {}x{}, not a positive "
                           "multiple of {} (min_pixels {}, max_pixels {})",
                           width, height, w_bar, h_bar, factor, min_pixels, max_pixels);
    }
    return std::pair<int, int>(int(h_bar), int(w_bar));
}

namespace {

// HF fuses rescale into normalise: mean / rescale_factor and std / rescale_factor in double
// (1 / (1/255) is exactly 255), then a float32 tensor op (x - mean') / std'.
void normalization_constants(const PreprocessConfig& config, float mean[3], float std_dev[3]) {
    for (int c = 0; c < 3; ++c) {
        mean[c] = static_cast<float>(double(config.image_mean[c]) * 255.0);
        std_dev[c] = static_cast<float>(double(config.image_std[c]) * 255.0);
    }
}

}  // namespace

void normalization_lut(const PreprocessConfig& config, float lut[3][256]) {
    float mean[3], std_dev[3];
    normalization_constants(config, mean, std_dev);
    for (int c = 0; c < 3; ++c) {
        for (int x = 0; x < 256; ++x) lut[c][x] = (static_cast<float>(x) - mean[c]) / std_dev[c];
    }
}

namespace {

// Writes the pixel_values rows of window row bh (image rows bh*M*P .. +M*P): patch
// (bh*M+mh, bw*M+mw) in window order, each row (c, t, y, x), every temporal copy identical (a
// still image is one frame repeated). Rows are built in a small buffer and then either appended
// to `out` (storage just allocated: plain stores into freshly zeroed pages are cheapest) or
// streamed over its elements from `at` on (reused storage: no read for ownership). Either way
// the large output is written once (no zero-fill pass).
void patchify_window_row(const io::Image& img, const PreprocessConfig& config, int bh, int grid_w,
                         const float mean[3], const float std_dev[3], std::vector<float>* row,
                         bool overwrite, std::size_t at, std::vector<float>* out) {
    const int P = config.patch_size, T = config.temporal_patch_size, M = config.merge_size;
    // Every tier gives the same bytes here; the best one is the fastest.
    const kernels::KernelTable& table = kernels::best_table();
    const std::size_t stride = std::size_t(img.width) * 3;
    for (int bw = 0; bw < grid_w / M; ++bw) {
        for (int mh = 0; mh < M; ++mh) {
            for (int mw = 0; mw < M; ++mw) {
                const std::size_t y0 = std::size_t(bh * M + mh) * P;
                const std::size_t x0 = std::size_t(bw * M + mw) * P;
                table.patch_normalize_u8({.src = img.rgb.data() + y0 * stride + x0 * 3,
                                          .src_stride = std::ptrdiff_t(stride),
                                          .patch = P,
                                          .temporal = T,
                                          .mean = mean,
                                          .std_dev = std_dev,
                                          .dst = row->data()});
                if (overwrite) {
                    table.copy_f32_streaming(row->data(), out->data() + at, row->size());
                    at += row->size();
                } else {
                    out->insert(out->end(), row->begin(), row->end());
                }
            }
        }
    }
}

}  // namespace

bool fused_patch_embed_possible(const PreprocessConfig& config) {
    return config.image_mean[0] == config.image_mean[1] &&
           config.image_mean[0] == config.image_mean[2] &&
           config.image_std[0] == config.image_std[1] && config.image_std[0] == config.image_std[2];
}

base::Status preprocess_image_into(const io::Image& image, const PreprocessConfig& config,
                                   PreprocessedImage* out) {
    auto fail = [out](base::Status status) {
        out->resized_height = out->resized_width = out->grid_h = out->grid_w = 0;
        out->resized.width = out->resized.height = 0;
        out->resized.rgb.clear();
        out->pixel_values.clear();
        return status;
    };
    if (image.width <= 0 || image.height <= 0 ||
        image.rgb.size() != std::size_t(image.width) * image.height * 3) {
        return fail(base::error(ErrorCode::kInvalidArgument,
                                "image of {}x{} with {} bytes is not a packed RGB image",
                                image.width, image.height, image.rgb.size()));
    }
    const int factor = config.patch_size * config.merge_size;
    const auto size =
        smart_resize(image.height, image.width, factor, config.min_pixels, config.max_pixels);
    if (!size.ok()) return fail(size.status());
    const int out_height = size->first, out_width = size->second;
    const int P = config.patch_size, T = config.temporal_patch_size, M = config.merge_size;
    const std::size_t row_len = std::size_t(3) * T * P * P;
    const int grid_h = out_height / P, grid_w = out_width / P;
    const bool want_pixels = config.pixel_values || !fused_patch_embed_possible(config);
    const std::size_t n_values = want_pixels ? std::size_t(grid_h) * grid_w * row_len : 0;
    float mean[3], std_dev[3];  // 0..255 units, as normalization_lut
    normalization_constants(config, mean, std_dev);
    std::vector<float> row(row_len);
    // Elements that already exist (a reused output) are overwritten in place; otherwise the
    // storage is (re)reserved and filled by appending.
    const bool overwrite = out->pixel_values.size() >= n_values;
    if (overwrite) {
        out->pixel_values.resize(n_values);
    } else {
        base::reserve_reusing(out->pixel_values, n_values);
    }
    // Each band of M*P resized rows is one row of merge windows: patchify it while it is hot.
    detail::resize_bicubic_aa_banded(
        image, out_height, out_width, M * P, &out->resized, [&](int y0, int /*rows*/) {
            if (n_values == 0) return;
            const int bh = y0 / (M * P);
            patchify_window_row(out->resized, config, bh, grid_w, mean, std_dev, &row, overwrite,
                                std::size_t(bh) * grid_w * M * row_len, &out->pixel_values);
        });
    out->resized_height = out_height;
    out->resized_width = out_width;
    out->grid_t = 1;
    out->grid_h = grid_h;
    out->grid_w = grid_w;
    out->merge_size = config.merge_size;
    return {};
}

base::Result<PreprocessedImage> preprocess_image(const io::Image& image,
                                                 const PreprocessConfig& config) {
    PreprocessedImage out;
    QVL_TRY(preprocess_image_into(image, config, &out));
    return out;
}

int visual_token_count(int grid_t, int grid_h, int grid_w, int merge_size) {
    return grid_t * grid_h * grid_w / (merge_size * merge_size);
}

std::int64_t pixels_per_visual_token(const PreprocessConfig& config) {
    const std::int64_t unit = std::int64_t(config.patch_size) * config.merge_size;
    return unit * unit;
}

int max_visual_tokens(const PreprocessConfig& config) {
    const std::int64_t tokens = config.max_pixels / pixels_per_visual_token(config);
    return int(std::min<std::int64_t>(tokens, std::numeric_limits<int>::max()));
}

}  // namespace qvl::image
