// Test-only reader for the golden files of the float64 reference (safetensors with F32, I64
// and I32 arrays) and helpers to compare against them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace qvl::test {

struct GoldenArray {
    std::vector<std::int64_t> shape;
    std::vector<double> values;  // every dtype widened to double
    std::vector<std::int64_t> as_ints() const;
};

// Reads every array of a golden.safetensors; fails the current test (ADD_FAILURE) on error.
std::map<std::string, GoldenArray> read_golden(const std::filesystem::path& path);

// max|a - ref| / max|ref| over all elements (infinity when the sizes differ).
double relative_error(std::span<const float> actual, const std::vector<double>& ref);

std::filesystem::path test_data_dir();         // tests/data
std::vector<std::string> golden_case_names();  // folders of tests/data/golden with a case.json

}  // namespace qvl::test
