// The private halves of the public API's pimpl classes (include/qvl/qvl.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "qvl/qvl.h"
#include "runtime/engine.h"
#include "runtime/generate.h"

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
    std::unique_ptr<runtime::Engine> engine;   // one slot: this conversation
    image::PreprocessConfig preprocess;        // effective_preprocess of the session's options
    bool profile = false;
    // The conversation so far, as the context has taken it in: every prompt's ids and every
    // answer token that was decoded, and the prompts' images. Each generate() resends it ahead
    // of the new prompt; the Engine finds it in the slot's KV (prefix reuse) and prefills only
    // the new ids, so the slot's KV is a cache of this record, never the only copy.
    std::vector<std::int32_t> held_ids;
    std::vector<image::PreprocessedImage> held_images;
};

}  // namespace qvl
