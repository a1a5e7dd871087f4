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

inline PreparedPrompt case_prompt(const std::string& name) {
    const model::Model& m = tiny_model();
    auto messages = text::load_messages_file(test::test_data_dir() / name / "case.json");
    EXPECT_TRUE(messages.ok()) << messages.status().message();
    if (!messages.ok()) return {};
    auto prompt =
        prepare_chat_prompt(m, messages.value(), effective_preprocess(m, SessionOptions{}), {});
    EXPECT_TRUE(prompt.ok()) << prompt.status().message();
    return prompt.ok() ? std::move(prompt).value() : PreparedPrompt{};
}

}  // namespace qvl::runtime::test_util
