#include "model/image_resize.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "base/check.h"
#include "io/image.h"
#include "model/image_preprocess.h"

namespace qvl::model {
namespace detail {

namespace {

// Keys cubic with a = -0.5, written as PyTorch's aa_filter for bicubic writes it.
double aa_cubic(double x) {
    constexpr double a = -0.5;
    x = std::fabs(x);
    if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
}

inline std::uint8_t clamp_shift(std::int32_t acc, int precision) {
    const std::int32_t v = acc >> precision;
    return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

}  // namespace

AxisWeights bicubic_aa_weights(int in_size, int out_size) {
    QVL_CHECK(in_size > 0 && out_size > 0, "resize sizes must be positive");
    const double scale = double(in_size) / out_size;
    const double support = scale >= 1.0 ? 2.0 * scale : 2.0;
    const int max_taps = int(std::ceil(support)) * 2 + 1;
    const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;

    std::vector<int> xmin(out_size), xsize(out_size);
    std::vector<double> weights(std::size_t(out_size) * max_taps, 0.0);
    double wt_max = 0.0;
    int taps = 0;
    for (int i = 0; i < out_size; ++i) {
        const double center = scale * (i + 0.5);
        const auto lo = std::max<std::int64_t>(std::int64_t(center - support + 0.5), 0);
        const auto hi = std::min<std::int64_t>(std::int64_t(center + support + 0.5), in_size);
        const int n = int(std::clamp<std::int64_t>(hi - lo, 0, max_taps));
        double* w = &weights[std::size_t(i) * max_taps];
        double total = 0.0;
        for (int j = 0; j < n; ++j) {
            w[j] = aa_cubic((j + lo - center + 0.5) * invscale);
            total += w[j];
        }
        if (total != 0.0) {
            for (int j = 0; j < n; ++j) {
                w[j] /= total;
                wt_max = std::max(wt_max, w[j]);
            }
        }
        xmin[i] = int(lo);
        xsize[i] = n;
        taps = std::max(taps, n);
    }
    // The largest precision that keeps round(wt_max * 2^p) inside int16.
    int precision = 0;
    while (precision < 22) {
        if (std::int64_t(0.5 + wt_max * double(1 << (precision + 1))) >= (1 << 15)) break;
        ++precision;
    }

    AxisWeights out;
    out.in_size = in_size;
    out.out_size = out_size;
    out.taps = taps;
    out.precision = precision;
    out.start.resize(out_size);
    out.w.assign(std::size_t(out_size) * taps, 0);
    for (int i = 0; i < out_size; ++i) {
        const int start = std::min(xmin[i], in_size - taps);
        out.start[i] = start;
        for (int j = 0; j < xsize[i]; ++j) {
            const double v = weights[std::size_t(i) * max_taps + j] * double(1 << precision);
            // (int)(v +- 0.5): rounds half away from zero.
            out.w[std::size_t(i) * taps + (xmin[i] - start) + j] =
                static_cast<std::int16_t>(v < 0 ? int(v - 0.5) : int(v + 0.5));
        }
    }
    return out;
}

void resize_rows_horizontal(const std::uint8_t* src, std::uint8_t* dst, int rows,
                            const AxisWeights& wx) {
    const int taps = wx.taps;
    const std::int32_t half = wx.precision > 0 ? std::int32_t(1) << (wx.precision - 1) : 0;
    for (int r = 0; r < rows; ++r) {
        const std::uint8_t* in = src + std::size_t(r) * wx.in_size * 3;
        std::uint8_t* out = dst + std::size_t(r) * wx.out_size * 3;
        for (int x = 0; x < wx.out_size; ++x) {
            const std::uint8_t* p = in + std::size_t(wx.start[x]) * 3;
            const std::int16_t* w = &wx.w[std::size_t(x) * taps];
            std::int32_t a0 = half, a1 = half, a2 = half;
            for (int k = 0; k < taps; ++k) {
                a0 += p[3 * k + 0] * w[k];
                a1 += p[3 * k + 1] * w[k];
                a2 += p[3 * k + 2] * w[k];
            }
            out[3 * x + 0] = clamp_shift(a0, wx.precision);
            out[3 * x + 1] = clamp_shift(a1, wx.precision);
            out[3 * x + 2] = clamp_shift(a2, wx.precision);
        }
    }
}

void resize_columns_vertical(const std::uint8_t* src, std::uint8_t* dst, std::size_t row_bytes,
                             const AxisWeights& wy) {
    constexpr std::size_t kChunk = 512;
    const int taps = wy.taps;
    const std::int32_t half = wy.precision > 0 ? std::int32_t(1) << (wy.precision - 1) : 0;
    std::int32_t acc[kChunk];
    for (int y = 0; y < wy.out_size; ++y) {
        const std::uint8_t* in = src + std::size_t(wy.start[y]) * row_bytes;
        const std::int16_t* w = &wy.w[std::size_t(y) * taps];
        std::uint8_t* out = dst + std::size_t(y) * row_bytes;
        for (std::size_t x0 = 0; x0 < row_bytes; x0 += kChunk) {
            const std::size_t n = std::min(kChunk, row_bytes - x0);
            for (std::size_t i = 0; i < n; ++i) acc[i] = half;
            for (int k = 0; k < taps; ++k) {
                const std::uint8_t* row = in + std::size_t(k) * row_bytes + x0;
                const std::int32_t wk = w[k];
                for (std::size_t i = 0; i < n; ++i) acc[i] += std::int32_t(row[i]) * wk;
            }
            for (std::size_t i = 0; i < n; ++i) out[x0 + i] = clamp_shift(acc[i], wy.precision);
        }
    }
}

}  // namespace detail

io::Image resize_bicubic_aa(const io::Image& src, int out_height, int out_width) {
    QVL_CHECK(out_height > 0 && out_width > 0, "resize_bicubic_aa: output size must be positive");
    QVL_CHECK(src.width > 0 && src.height > 0 &&
                  src.rgb.size() == std::size_t(src.width) * src.height * 3,
              "resize_bicubic_aa: malformed source image");
    if (out_height == src.height && out_width == src.width) return src;
    io::Image horizontal;
    const io::Image* stage = &src;
    if (out_width != src.width) {
        const detail::AxisWeights wx = detail::bicubic_aa_weights(src.width, out_width);
        horizontal.width = out_width;
        horizontal.height = src.height;
        horizontal.rgb.resize(std::size_t(out_width) * src.height * 3);
        detail::resize_rows_horizontal(src.rgb.data(), horizontal.rgb.data(), src.height, wx);
        stage = &horizontal;
    }
    if (out_height == src.height) return horizontal;
    const detail::AxisWeights wy = detail::bicubic_aa_weights(src.height, out_height);
    io::Image out;
    out.width = out_width;
    out.height = out_height;
    out.rgb.resize(std::size_t(out_width) * out_height * 3);
    detail::resize_columns_vertical(stage->rgb.data(), out.rgb.data(), std::size_t(out_width) * 3,
                                    wy);
    return out;
}

}  // namespace qvl::model
