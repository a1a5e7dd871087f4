// Round to nearest even at bf16 (8 significant bits) for finite x, written here rather than
// taken from the engine (base/bf16.h), so that the expectations of the bf16 kernels and of the
// bf16 KV cache share nothing with the code under test.
#pragma once

#include <cstdint>
#include <cstring>

namespace qvl::test {

inline float rne_bf16(float x) {
    std::uint32_t u = 0;
    std::memcpy(&u, &x, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    std::memcpy(&x, &u, 4);
    return x;
}

// The bits of rne_bf16(x).
inline std::uint16_t rne_bf16_bits(float x) {
    const float r = rne_bf16(x);
    std::uint32_t u = 0;
    std::memcpy(&u, &r, 4);
    return std::uint16_t(u >> 16);
}

}  // namespace qvl::test
