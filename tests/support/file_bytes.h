// A test fixture file's bytes, as the decoders take them (a missing file fails the test).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace qvl::test {

inline std::vector<std::byte> file_bytes(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    std::vector<std::byte> out;
    for (auto it = std::istreambuf_iterator<char>(f); it != std::istreambuf_iterator<char>(); ++it)
        out.push_back(static_cast<std::byte>(*it));
    return out;
}

}  // namespace qvl::test
