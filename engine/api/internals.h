// The private halves of the public API's pimpl classes (include/qvl/qvl.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "qvl/qvl.h"
#include "runtime/generate.h"
#include "runtime/session.h"

namespace qvl {

struct Model::Impl {
    std::unique_ptr<model::Model> model;
    std::string dir;
};

struct Prompt::Impl {
    runtime::PreparedPrompt prepared;
    std::vector<ImageInfo> infos;
};

struct Session::Impl {
    std::shared_ptr<const Model::Impl> model;  // keeps the model alive as long as the session
    std::unique_ptr<runtime::Session> session;
    image::PreprocessConfig preprocess;  // effective_preprocess of the session's options
    bool profile = false;
};

}  // namespace qvl
