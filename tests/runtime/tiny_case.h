// Shared by the runtime tests: the tiny checkpoint and a golden case's prepared prompt.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "model/model.h"
#include "runtime/generate.h"
#include "support/golden.h"
#include "text/chat_template.h"

namespace qvl::runtime::test_util {

inline const model::Model& tiny_model() {
    static std::unique_ptr<model::Model> model = [] {
        auto m = model::Model::load(test::test_data_dir() / "tiny-qwen3vl");
        EXPECT_TRUE(m.ok()) << m.status().message();
        return m.ok() ? std::move(m).value() : nullptr;
    }();
    return *model;
}

// The tiny checkpoint with the formats of issue 49: 4-bit text weights and the int8 vision tower.
inline const model::Model& tiny_model_quantized() {
    static std::unique_ptr<model::Model> model = [] {
        model::LoadOptions lo;
        lo.weights = model::WeightFormat::kQ4;
        lo.vision_q8 = true;
        auto m = model::Model::load(test::test_data_dir() / "tiny-qwen3vl", lo);
        EXPECT_TRUE(m.ok()) << m.status().message();
        return m.ok() ? std::move(m).value() : nullptr;
    }();
    return *model;
}

// A golden case's prompt (tests/data/NAME/case.json) prepared for model m.
inline PreparedPrompt golden_prompt(const model::Model& m, const std::string& name) {
    auto messages = text::load_messages_file(test::test_data_dir() / name / "case.json");
    EXPECT_TRUE(messages.ok()) << messages.status().message();
    if (!messages.ok()) return {};
    auto prompt =
        prepare_chat_prompt(m, messages.value(), effective_preprocess(m, SessionOptions{}), {});
    EXPECT_TRUE(prompt.ok()) << prompt.status().message();
    return prompt.ok() ? std::move(prompt).value() : PreparedPrompt{};
}

inline PreparedPrompt case_prompt(const std::string& name) {
    return golden_prompt(tiny_model(), name);
}

}  // namespace qvl::runtime::test_util
