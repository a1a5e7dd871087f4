// Reference passes of kernels/resize.h: the formula, loop for loop.
#include <algorithm>

#include "kernels/resize.h"

namespace qvl::kernels::ref {

namespace {

inline std::uint8_t clamp_shift(std::int32_t acc, int precision) {
    return static_cast<std::uint8_t>(std::clamp(acc >> precision, 0, 255));
}

}  // namespace

void resize_vertical_u8(const ResizeVerticalArgs& a) {
    const std::int32_t half = std::int32_t(1) << (a.precision - 1);
    for (int y = 0; y < a.out_rows; ++y) {
        const std::uint8_t* in = a.src + std::ptrdiff_t(a.start[y]) * a.src_stride;
        const std::int16_t* w = a.weights + std::size_t(y) * a.taps;
        std::uint8_t* out = a.dst + std::ptrdiff_t(y) * a.dst_stride;
        for (std::size_t x = 0; x < a.row_bytes; ++x) {
            std::int32_t acc = half;
            for (int k = 0; k < a.taps; ++k) acc += in[k * a.src_stride + std::ptrdiff_t(x)] * w[k];
            out[x] = clamp_shift(acc, a.precision);
        }
    }
}

void resize_horizontal_rgb_u8(const ResizeHorizontalArgs& a) {
    const std::int32_t half = std::int32_t(1) << (a.precision - 1);
    for (int r = 0; r < a.rows; ++r) {
        const std::uint8_t* in = a.src + std::ptrdiff_t(r) * a.src_stride;
        std::uint8_t* out = a.dst + std::ptrdiff_t(r) * a.dst_stride;
        for (int x = 0; x < a.out_width; ++x) {
            const std::uint8_t* p = in + std::size_t(a.start[x]) * 3;
            const std::int16_t* w = a.weights + std::size_t(x) * a.taps;
            for (int c = 0; c < 3; ++c) {
                std::int32_t acc = half;
                for (int k = 0; k < a.taps; ++k) acc += p[3 * k + c] * w[k];
                out[3 * x + c] = clamp_shift(acc, a.precision);
            }
        }
    }
}

}  // namespace qvl::kernels::ref
