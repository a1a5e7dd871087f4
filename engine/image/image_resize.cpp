#include "image/image_resize.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "base/check.h"
#include "base/huge_pages.h"
#include "image/image_preprocess.h"
#include "io/image.h"
#include "kernels/kernel_table.h"

namespace qvl::image {
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
        // PyTorch truncates x + 0.5 here (not round-to-nearest); bit-exactness needs the same.
        // NOLINTBEGIN(bugprone-incorrect-roundings)
        const auto lo = std::max<std::int64_t>(std::int64_t(center - support + 0.5), 0);
        const auto hi = std::min<std::int64_t>(std::int64_t(center + support + 0.5), in_size);
        // NOLINTEND(bugprone-incorrect-roundings)
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
        // PyTorch's own truncation of x + 0.5 (x >= 0), kept for bit-exactness.
        // NOLINTNEXTLINE(bugprone-incorrect-roundings)
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
            out.w[std::size_t(i) * taps + (xmin[i] - start) + j] = static_cast<std::int16_t>(
                v < 0 ? int(v - 0.5) : int(v + 0.5));  // NOLINT(bugprone-incorrect-roundings)
        }
    }
    return out;
}

namespace {

// Input rows the staging buffer of resize_bicubic_aa_banded must hold: the most that one band
// of output rows reads. The width pass runs band by band into it, holding input rows
// [stage_first, stage_end) (a few dozen): no full-height intermediate image is allocated, and
// the vertical pass reads cached rows. Tap windows only move down (start[] is non-decreasing),
// so the rows two bands share are moved to the top of the buffer instead of being recomputed.
std::size_t staged_rows(const AxisWeights& wy, int out_height, int band_rows) {
    int max_rows = 0;
    for (int y0 = 0; y0 < out_height; y0 += band_rows) {
        const int last = std::min(band_rows, out_height - y0) - 1 + y0;
        max_rows = std::max(max_rows, wy.start[last] + wy.taps - wy.start[y0]);
    }
    return std::size_t(max_rows);
}

}  // namespace

void resize_bicubic_aa_banded(const io::Image& src, int out_height, int out_width, int band_rows,
                              io::Image* out, const std::function<void(int, int)>& on_band) {
    QVL_CHECK(out_height > 0 && out_width > 0 && band_rows > 0,
              "resize_bicubic_aa: output size must be positive");
    QVL_CHECK(src.width > 0 && src.height > 0 &&
                  src.rgb.size() == std::size_t(src.width) * src.height * 3,
              "resize_bicubic_aa: malformed source image");
    QVL_CHECK(out != &src, "resize_bicubic_aa: output aliases the source");
    // Every tier gives the same bytes here; the best one is the fastest.
    const kernels::KernelTable& table = kernels::best_table();
    const bool horizontal = out_width != src.width;
    const bool vertical = out_height != src.height;
    AxisWeights wx, wy;
    if (horizontal) wx = bicubic_aa_weights(src.width, out_width);
    if (vertical) wy = bicubic_aa_weights(src.height, out_height);
    const std::size_t row_bytes = std::size_t(out_width) * 3;
    auto horizontal_pass = [&](int y0, int rows, std::uint8_t* dst) {
        table.resize_horizontal_rgb_u8({.src = src.rgb.data() + std::size_t(y0) * src.width * 3,
                                        .src_stride = std::ptrdiff_t(src.width) * 3,
                                        .dst = dst,
                                        .dst_stride = std::ptrdiff_t(row_bytes),
                                        .rows = rows,
                                        .in_width = src.width,
                                        .out_width = out_width,
                                        .start = wx.start.data(),
                                        .weights = wx.w.data(),
                                        .taps = wx.taps,
                                        .precision = wx.precision});
    };
    // When both axes change, the width pass runs band by band into `stage` (staged_rows).
    std::vector<std::uint8_t> stage;
    std::vector<int> stage_start;
    int stage_first = 0, stage_end = 0;
    if (horizontal && vertical) {
        stage.resize(staged_rows(wy, out_height, band_rows) * row_bytes);
        stage_start.resize(std::size_t(std::min(band_rows, out_height)));
    }
    base::resize_reusing(out->rgb, std::size_t(out_height) * row_bytes);
    out->width = out_width;
    out->height = out_height;
    for (int y0 = 0; y0 < out_height; y0 += band_rows) {
        const int rows = std::min(band_rows, out_height - y0);
        std::uint8_t* dst = out->rgb.data() + std::size_t(y0) * row_bytes;
        if (horizontal && vertical) {
            const int first = wy.start[y0];
            const int end = wy.start[y0 + rows - 1] + wy.taps;
            const int kept = std::max(0, stage_end - first);
            if (kept > 0) {
                std::memmove(stage.data(),
                             stage.data() + std::size_t(first - stage_first) * row_bytes,
                             std::size_t(kept) * row_bytes);
            }
            horizontal_pass(first + kept, end - first - kept,
                            stage.data() + std::size_t(kept) * row_bytes);
            stage_first = first;
            stage_end = end;
            for (int i = 0; i < rows; ++i) stage_start[i] = wy.start[y0 + i] - first;
        }
        if (vertical) {
            const bool staged = horizontal;
            table.resize_vertical_u8({.src = staged ? stage.data() : src.rgb.data(),
                                      .src_stride = std::ptrdiff_t(row_bytes),
                                      .dst = dst,
                                      .dst_stride = std::ptrdiff_t(row_bytes),
                                      .row_bytes = row_bytes,
                                      .out_rows = rows,
                                      .start = staged ? stage_start.data() : wy.start.data() + y0,
                                      .weights = wy.w.data() + std::size_t(y0) * wy.taps,
                                      .taps = wy.taps,
                                      .precision = wy.precision});
        } else if (horizontal) {
            horizontal_pass(y0, rows, dst);
        } else {
            std::memcpy(dst, src.rgb.data() + std::size_t(y0) * row_bytes, rows * row_bytes);
        }
        if (on_band) on_band(y0, rows);
    }
}

}  // namespace detail

io::Image resize_bicubic_aa(const io::Image& src, int out_height, int out_width) {
    io::Image out;
    detail::resize_bicubic_aa_banded(src, out_height, out_width, out_height, &out, {});
    return out;
}

}  // namespace qvl::image
