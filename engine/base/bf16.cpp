#include "base/bf16.h"

#include <cmath>

namespace qvl::base {

float f16_to_f32(std::uint16_t h) {
    const int sign = (h >> 15) & 1;
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    float value;
    if (exponent == 0) {
        value = std::ldexp(float(mantissa), -24);  // subnormal
    } else if (exponent == 31) {
        value = mantissa ? NAN : INFINITY;
    } else {
        value = std::ldexp(float(mantissa | 0x400), exponent - 25);
    }
    return sign ? -value : value;
}

}  // namespace qvl::base
