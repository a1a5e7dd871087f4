// The tiny test checkpoint through the public API, shared by the api tests.
#pragma once

#include <gtest/gtest.h>
#include <qvl/qvl.h>

#include <string>

#include "support/golden.h"

namespace qvl::test {

inline const std::string kTiny = (test_data_dir() / "tiny-qwen3vl").string();
inline const std::string kPng = (test_data_dir() / "golden" / "images" / "img_64x64.png").string();

// Loaded once per test binary.
inline const Model& tiny() {
    static const Model model = [] {
        Result<Model> m = Model::load(kTiny);
        EXPECT_TRUE(m.ok()) << m.status().message();
        return std::move(m).value();
    }();
    return model;
}

}  // namespace qvl::test
