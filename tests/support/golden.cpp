#include "support/golden.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "io/json.h"

namespace qvl::test {

std::vector<std::int64_t> GoldenArray::as_ints() const {
    std::vector<std::int64_t> out(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = std::int64_t(values[i]);
    return out;
}

std::map<std::string, GoldenArray> read_golden(const std::filesystem::path& path) {
    std::map<std::string, GoldenArray> out;
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 8) {
        ADD_FAILURE() << path << ": too short";
        return out;
    }
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    base::Result<io::JsonValue> header = io::parse_json(bytes.substr(8, n), path.string());
    if (!header.ok()) {
        ADD_FAILURE() << header.status().message();
        return out;
    }
    const char* data = bytes.data() + 8 + n;
    for (const auto& [name, info] : header.value().members()) {
        if (name == "__metadata__") continue;
        GoldenArray a;
        for (const io::JsonValue& d : info.find("shape")->items()) a.shape.push_back(d.as_int());
        const std::string& dtype = info.find("dtype")->as_string();
        const std::int64_t begin = info.find("data_offsets")->items()[0].as_int();
        const std::int64_t end = info.find("data_offsets")->items()[1].as_int();
        const char* p = data + begin;
        if (dtype == "F32") {
            for (std::int64_t i = 0; i < (end - begin) / 4; ++i) {
                float f;
                std::memcpy(&f, p + 4 * i, 4);
                a.values.push_back(f);
            }
        } else if (dtype == "I64") {
            for (std::int64_t i = 0; i < (end - begin) / 8; ++i) {
                std::int64_t v;
                std::memcpy(&v, p + 8 * i, 8);
                a.values.push_back(double(v));
            }
        } else if (dtype == "I32") {
            for (std::int64_t i = 0; i < (end - begin) / 4; ++i) {
                std::int32_t v;
                std::memcpy(&v, p + 4 * i, 4);
                a.values.push_back(double(v));
            }
        } else {
            ADD_FAILURE() << path << ": unexpected dtype " << dtype;
        }
        out[name] = std::move(a);
    }
    return out;
}

double relative_error(std::span<const float> actual, const std::vector<double>& ref) {
    if (actual.size() != ref.size()) return std::numeric_limits<double>::infinity();
    double max_diff = 0, max_ref = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        max_diff = std::max(max_diff, std::abs(double(actual[i]) - ref[i]));
        max_ref = std::max(max_ref, std::abs(ref[i]));
    }
    return max_diff / std::max(max_ref, 1e-30);
}

std::filesystem::path test_data_dir() { return QVL_TEST_DATA_DIR; }

std::vector<std::string> golden_case_names() {
    std::vector<std::string> names;
    for (const char* set : {"golden", "golden_extra"}) {
        if (!std::filesystem::exists(test_data_dir() / set)) continue;
        for (const auto& e : std::filesystem::directory_iterator(test_data_dir() / set)) {
            if (std::filesystem::exists(e.path() / "case.json")) {
                names.push_back(std::string(set) + "/" + e.path().filename().string());
            }
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace qvl::test
