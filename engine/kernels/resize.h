// The two passes of a separable uint8 image resize with int16 fixed-point weights, as PyTorch's
// antialiased uint8 resize computes them (the weights themselves come from the caller, e.g.
// image/image_resize.h). Every output value is
//   clamp((2^(precision-1) + sum_k in[k] * w[k]) >> precision, 0, 255)
// with the sum in int32 and an arithmetic shift, so every ISA gives the same bytes.
// Entries: KernelTable::resize_vertical_u8 / resize_horizontal_rgb_u8 (kernels/kernel_table.h).
// Pointers need no alignment; src and dst must not overlap. Tap windows are the caller's job:
// start[i] + taps must stay inside the input (zero-padded weights are fine).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::kernels {

// Vertical pass over rows of row_bytes bytes (any interleaving: channels are independent):
// dst[y][x] = value over in[k] = src[start[y] + k][x], w[k] = weights[y * taps + k],
// for y < out_rows, x < row_bytes. Strides in bytes (>= row_bytes).
struct ResizeVerticalArgs {
    const std::uint8_t* src = nullptr;
    std::ptrdiff_t src_stride = 0;
    std::uint8_t* dst = nullptr;
    std::ptrdiff_t dst_stride = 0;
    std::size_t row_bytes = 0;
    int out_rows = 0;
    const int* start = nullptr;             // [out_rows]
    const std::int16_t* weights = nullptr;  // [out_rows * taps]
    int taps = 0;
    int precision = 0;  // 1..22
};

// Horizontal pass over packed 3-channel pixels: for each of `rows` rows, output pixel x,
// channel c: value over in[k] = src_row[(start[x] + k) * 3 + c], w[k] = weights[x * taps + k].
// Strides in bytes (>= 3 * in width / 3 * out_width).
struct ResizeHorizontalArgs {
    const std::uint8_t* src = nullptr;
    std::ptrdiff_t src_stride = 0;
    std::uint8_t* dst = nullptr;
    std::ptrdiff_t dst_stride = 0;
    int rows = 0;
    int in_width = 0;  // pixels; start[x] + taps <= in_width
    int out_width = 0;
    const int* start = nullptr;             // [out_width]
    const std::int16_t* weights = nullptr;  // [out_width * taps]
    int taps = 0;
    int precision = 0;  // 1..22
};

namespace ref {
void resize_vertical_u8(const ResizeVerticalArgs& args);
void resize_horizontal_rgb_u8(const ResizeHorizontalArgs& args);
}  // namespace ref

}  // namespace qvl::kernels
