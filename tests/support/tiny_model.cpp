#include "support/tiny_model.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "support/golden.h"

namespace qvl::test {

const model::Model& tiny_model() {
    static const std::unique_ptr<model::Model> model = [] {
        auto m = model::Model::load(test_data_dir() / "tiny-qwen3vl");
        if (!m.ok()) {
            ADD_FAILURE() << m.status().message();
            std::abort();
        }
        return std::move(m).value();
    }();
    return *model;
}

}  // namespace qvl::test
