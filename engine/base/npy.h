// Writes float32 arrays as NumPy .npy files (format 1.0, little-endian, C order).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace qvl::base {

// Returns an empty string on success, else what went wrong.
std::string write_npy_f32(const std::string& path, std::span<const float> data,
                          const std::vector<std::int64_t>& shape);

}  // namespace qvl::base
