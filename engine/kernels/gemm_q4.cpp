// 4-bit weights (kernels/gemm_q4.h): sizes, quantization at load, and the scalar panel kernel.
// The tile driver, activation quantizer and epilogue are the int8 ones (kernels/gemm_q8.cpp).
#include "kernels/gemm_q4.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "base/bf16.h"
#include "base/check.h"
#include "kernels/gemm_q8_internal.h"
#include "kernels/weight_panels.h"

namespace qvl::kernels {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }
std::size_t round64(std::size_t x) { return (x + 63) / 64 * 64; }

// One block of n values (n a multiple of 8) into u = q + 8 and its half scale: the reference
// formula (kernels/gemm_q4.h), value by value.
void quantize_block(const float* x, int n, std::uint8_t* u, std::uint16_t* d16) {
    float ext = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > std::fabs(ext)) ext = x[i];  // NaN never wins
    }
    *d16 = detail::q4_block_scale(ext);
    if (*d16 == 0) {
        std::fill(u, u + n, std::uint8_t{8});
        return;
    }
    const float d = base::f16_to_f32(*d16);
    for (int i = 0; i < n; ++i) {
        // |x / d| <= 8 (1 + 2^-10): adding and removing 1.5·2^23 rounds to nearest even, exactly
        // as nearbyint, in a loop the compiler vectorises (nearbyint is a call per value).
        constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
        float q = (x[i] / d + kRound) - kRound;
        q = q > 7.0f ? 7.0f : q < -8.0f ? -8.0f : q == q ? q : 0.0f;  // NaN -> 0
        u[i] = std::uint8_t(int(q) + 8);
    }
}

// u values (n a multiple of 8) to nibble words: word i holds u[8i + t] in the low nibble and
// u[8i + 4 + t] in the high nibble of its byte t (the layout of kernels/gemm_q4.h, one row).
void pack_nibbles(const std::uint8_t* u, std::size_t n, std::uint8_t* words) {
    for (std::size_t i = 0; i < n / 8; ++i) {
        std::uint64_t v;
        std::memcpy(&v, u + 8 * i, sizeof v);  // little endian: u[8i] in the lowest byte
        const auto w = std::uint32_t(std::uint32_t(v) | (std::uint32_t(v >> 32) << 4));
        std::memcpy(words + 4 * i, &w, sizeof w);
    }
}

}  // namespace

std::uint16_t f32_to_f16(float f) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    const auto sign = std::uint16_t((u >> 16) & 0x8000u);
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return std::uint16_t(sign | 0x7e00u);   // NaN
    if (a >= 0x47800000u) return std::uint16_t(sign | 0x7c00u);  // >= 2^16: infinity
    if (a < 0x38800000u) {  // below 2^-14: a subnormal half (or zero); f·2^24 is exact
        return std::uint16_t(sign | std::uint16_t(std::nearbyint(std::fabs(f) * 16777216.0f)));
    }
    const std::uint32_t exponent = (a >> 23) - 112;  // rebiased from 127 to 15
    const std::uint32_t mantissa = a & 0x7fffffu;
    std::uint32_t h = (exponent << 10) | (mantissa >> 13);
    const std::uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;  // carries into the exponent
    return std::uint16_t(sign | h);
}

std::size_t q4_data_bytes(int rows, int cols, int block) {
    QVL_CHECK(q8_block_ok(block) && rows >= 0 && cols >= 0, "q4: bad shape or block size");
    return round64(std::size_t(ceil_div(rows, kQ8Panel)) * kQ8Panel *
                   std::size_t(ceil_div(cols, block)) * std::size_t(block) / 2);
}

std::size_t q4_scale_bytes(int rows, int cols, int block) {
    QVL_CHECK(q8_block_ok(block) && rows >= 0 && cols >= 0, "q4: bad shape or block size");
    return round64(sizeof(std::uint16_t) * std::size_t(ceil_div(rows, kQ8Panel)) * kQ8Panel *
                   std::size_t(ceil_div(cols, block)));
}

Q8Matrix q4_describe(int rows, int cols, int block, std::uint8_t* q, std::uint16_t* scales) {
    QVL_CHECK(q8_block_ok(block) && rows >= 0 && cols >= 0, "q4: bad shape or block size");
    return {.rows = rows,
            .cols = cols,
            .block = block,
            .k_blocks = ceil_div(cols, block),
            .panels = ceil_div(rows, kQ8Panel),
            .q = reinterpret_cast<const std::int8_t*>(q),
            .scales = nullptr,
            .bits = 4,
            .scales_f16 = scales};
}

void q4_quantize_panels(const void* w, WeightType type, std::ptrdiff_t ldw, const Q8Matrix& m,
                        int panel0, int panel1, Isa isa) {
    QVL_CHECK(type == WeightType::kBF16 || type == WeightType::kF32, "q4: source must be bf16/f32");
    QVL_CHECK(m.bits == 4, "q4: not a 4-bit matrix");
    auto* q = reinterpret_cast<std::uint8_t*>(const_cast<std::int8_t*>(m.q));
    auto* scales = const_cast<std::uint16_t*>(m.scales_f16);
    const std::size_t k_pad = std::size_t(m.k_blocks) * std::size_t(m.block);
    std::vector<float> row(k_pad, 0.0f);
    std::vector<std::uint8_t> u(k_pad);
    std::vector<std::uint8_t> words(kQ8Panel * k_pad / 2);  // the panel's 16 rows as nibbles
    std::vector<std::uint16_t> d(std::size_t(m.k_blocks));
    detail::Q4QuantizeRowFn quantize_row = detail::q4_quantize_row;
    if (isa == Isa::kAvx512Bf16) quantize_row = detail::q4_quantize_row_avx512;
    if (isa == Isa::kAvx2 || isa == Isa::kAvx512) quantize_row = detail::q4_quantize_row_avx2;
    const std::size_t block_bytes = std::size_t(m.block) * kQ8Panel / 2;
    for (int p = panel0; p < panel1; ++p) {
        for (int col = 0; col < kQ8Panel; ++col) {
            const int r = p * kQ8Panel + col;
            // One source row widened at once (a loop the compiler vectorises), zero past cols.
            if (r < m.rows && type == WeightType::kBF16) {
                const auto* src = static_cast<const std::uint16_t*>(w) + std::ptrdiff_t(r) * ldw;
                for (int i = 0; i < m.cols; ++i) {
                    row[std::size_t(i)] = std::bit_cast<float>(std::uint32_t(src[i]) << 16);
                }
            } else if (r < m.rows) {
                const float* src = static_cast<const float*>(w) + std::ptrdiff_t(r) * ldw;
                std::copy(src, src + m.cols, row.begin());
            } else {
                std::fill(row.begin(), row.end(), 0.0f);
            }
            quantize_row(row.data(), int(k_pad), m.block, u.data(), d.data());
            pack_nibbles(u.data(), k_pad, words.data() + std::size_t(col) * k_pad / 2);
            for (int b = 0; b < m.k_blocks; ++b) {
                const std::size_t base = std::size_t(p) * std::size_t(m.k_blocks) + std::size_t(b);
                scales[base * kQ8Panel + std::size_t(col)] = d[std::size_t(b)];
            }
        }
        // Block b of the panel: word h of each of the 16 rows per 64 bytes, written in order.
        for (int b = 0; b < m.k_blocks; ++b) {
            const void* rows[kQ8Panel];
            for (int col = 0; col < kQ8Panel; ++col) {
                rows[col] =
                    words.data() + (std::size_t(col) * k_pad + std::size_t(b) * m.block) / 2;
            }
            interleave_words16(
                rows, m.block / 8,
                q + (std::size_t(p) * std::size_t(m.k_blocks) + std::size_t(b)) * block_bytes);
        }
    }
}

namespace detail {

std::uint16_t q4_block_scale(float ext) {
    if (!std::isfinite(ext)) return 0;
    const std::uint16_t h = f32_to_f16(ext / -8.0f);
    // A zero or infinite scale (underflow, overflow) quantizes the block to zeros.
    if ((h & 0x7fffu) == 0 || (h & 0x7c00u) == 0x7c00u) return 0;
    return h;
}

void q4_quantize_row(const float* x, int n, int block, std::uint8_t* u, std::uint16_t* d16) {
    for (int b = 0; b * block < n; ++b) {
        quantize_block(x + std::ptrdiff_t(b) * block, block, u + std::ptrdiff_t(b) * block,
                       d16 + b);
    }
}

std::int8_t q4_weight(const Q8Matrix& m, int row, int col) {
    const int p = row / kQ8Panel, c = row % kQ8Panel, b = col / m.block, i = col % m.block;
    const std::size_t base = std::size_t(p * m.k_blocks + b) * kQ8Panel * std::size_t(m.block) / 2;
    const auto byte = std::uint8_t(m.q[base + std::size_t(i / 8 * 64 + c * 4 + i % 4)]);
    const int u = (i % 8) < 4 ? (byte & 0xf) : (byte >> 4);
    return std::int8_t(u - 8);
}

float q4_scale(const Q8Matrix& m, int row, int block_index) {
    const int p = row / kQ8Panel, c = row % kQ8Panel;
    return base::f16_to_f32(
        m.scales_f16[std::size_t(p * m.k_blocks + block_index) * kQ8Panel + std::size_t(c)]);
}

void q4_panel_scalar(const Q8PanelArgs& a) {
    const Q8Matrix& w = *a.w;
    for (int r = 0; r < a.rows; ++r) {
        const std::int8_t* qa = a.qa + r * a.lda_q;
        for (int col = 0; col < kQ8Panel; ++col) {
            const int row = a.panel * kQ8Panel + col;
            float acc = 0.0f;
            for (int b = 0; b < w.k_blocks; ++b) {
                std::int32_t isum = 0;
                for (int i = 0; i < w.block; ++i) {
                    isum += std::int32_t(qa[b * w.block + i]) *
                            std::int32_t(q4_weight(w, row, b * w.block + i));
                }
                const float t = float(isum) * q4_scale(w, row, b);
                acc = std::fma(t, a.da[std::ptrdiff_t(r) * w.k_blocks + b], acc);
            }
            a.acc[r * kQ8Panel + col] = acc;
        }
    }
}

}  // namespace detail
}  // namespace qvl::kernels
