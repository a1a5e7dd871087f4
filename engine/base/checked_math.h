// Overflow-checked size arithmetic for numbers that come from files (shapes, offsets, image
// dimensions). Each returns false on overflow and leaves *out unspecified.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace qvl::base {

inline bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
    return !__builtin_mul_overflow(a, b, out);
}

inline bool checked_add(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
    return !__builtin_add_overflow(a, b, out);
}

// Product of all factors; false if it overflows 64 bits.
inline bool checked_product(std::initializer_list<std::uint64_t> factors, std::uint64_t* out) {
    std::uint64_t p = 1;
    for (std::uint64_t f : factors) {
        if (!checked_mul(p, f, &p)) return false;
    }
    *out = p;
    return true;
}

}  // namespace qvl::base
