// bfloat16 storage type and exact conversions. Widening is exact; narrowing rounds to nearest
// even (NaN stays NaN), matching torch's float -> bfloat16 cast.
#pragma once

#include <cstdint>
#include <cstring>

namespace qvl::base {

struct bf16 {
    std::uint16_t bits = 0;
};

inline float bf16_to_f32(bf16 v) {
    const std::uint32_t u = std::uint32_t(v.bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

inline bf16 f32_to_bf16(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{std::uint16_t((u >> 16) | 0x40)};  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return bf16{std::uint16_t(u >> 16)};
}

// Rounds a float to the nearest bf16 value and returns it as float.
inline float round_to_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

// IEEE half -> float (for F16 checkpoints). Exact.
float f16_to_f32(std::uint16_t h);

}  // namespace qvl::base
