// The private halves of the public API's pimpl classes (include/qvl/qvl.h), and the pieces the
// Session and the Engine share: one road from messages to a prompt, one conversion of a
// finished request into a Generation.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "image/image_preprocess.h"
#include "io/image.h"
#include "model/model.h"
#include "qvl/qvl.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "text/chat_tools.h"

namespace qvl {

struct Model::Impl {
    std::unique_ptr<model::Model> model;
    std::string dir;
};

struct OutputConstraint::Impl {
    std::shared_ptr<const grammar::Grammar> grammar;
    std::string trigger;  // runtime::GenerateParams::grammar_trigger
    std::string banned;   // a token the answer never holds (tool_choice "none": "<tool_call>")
};

struct Tools::Impl {
    std::vector<text::ChatTool> tools;
    text::ToolChoice choice;
};

struct Prompt::Impl {
    runtime::PreparedPrompt prepared;
    std::vector<ImageInfo> infos;
    std::vector<float> joined_pixels;  // Prompt::pixel_values of a video (its frames' rows)
};

namespace api {

// How a session or an engine turns messages into prompts: the model, the preprocessing of its
// image budget (videos: the model's sampling, each frame pair within that budget), the
// decoders' limits and the resolver of URL parts.
struct PromptRoad {
    const model::Model* model = nullptr;
    image::PreprocessConfig preprocess;
    image::VideoPreprocessConfig video;
    io::ImageLimits limits;
    io::VideoLimits video_limits;
    MediaResolver resolve_media;

    // The road of an engine with these options (session: its image budget).
    static PromptRoad make(const model::Model& model, const runtime::SessionOptions& session,
                           const EngineOptions& options);
    Result<Prompt> prepare(const std::vector<Message>& messages, const Tools& tools = {},
                           bool add_generation_prompt = true) const;
    Result<Prompt> prepare_raw(std::string_view text) const;
};

// How many of PreparedPrompt::images an image or video of its infos stands for.
inline std::size_t prepared_images_of(const runtime::ImageInfo& info) {
    return info.video ? std::size_t(info.frame_pairs) : 1;
}

// The public result of a finished request (finish_reason as the runtime names it).
Generation to_generation(runtime::RequestResult&& r, const Sampling& sampling);

// The runtime's request for a public one (its prompt is moved out).
base::Result<runtime::Request> runtime_request(Request&& in, const model::Model& m);

// runtime::SamplingParams of a public Sampling; kInvalidArgument for values out of range
// (logit_bias ids are checked against the vocabulary).
base::Result<runtime::SamplingParams> to_engine(const Sampling& s, int vocab);

}  // namespace api

namespace api {

// The engine does not throw; a stray std::bad_alloc from a container becomes a Status here
// ("what: ..."), so nothing crosses the API as an exception.
template <class T, class Fn>
Result<T> guarded(const char* what, Fn&& fn) {
    try {
        return fn();
    } catch (const std::exception& e) {
        return Status(ErrorCode::kResourceExhausted, std::string(what) + ": " + e.what());
    }
}

// What the Engine and the Session both are: a runtime::Engine over a model, and its road to
// prompts.
struct Core {
    std::shared_ptr<const Model::Impl> model;  // keeps the model alive as long as the engine
    std::unique_ptr<runtime::Engine> engine;
    PromptRoad road;
    bool profile = false;

    static base::Result<Core> create(const Model& model, const EngineOptions& options);
    // Submits and blocks until the request finishes (its on_done is replaced). When
    // *interrupt (may be null) becomes true the request is cancelled, even mid-prefill. A request
    // that is refused or fails returns its error.
    base::Result<runtime::RequestResult> wait_for(runtime::Request request,
                                                  const std::atomic<bool>* interrupt) const;

    // The settings in effect, as Engine and Session report them.
    int context_size() const { return engine->ctx_size(); }
    int threads() const { return engine->threads(); }
    std::string isa() const;
    Precision precision() const;
    std::string profile_report() const;
};

}  // namespace api

struct Engine::Impl {
    api::Core core;
    // Requests refused before they reach the runtime (bad sampling values): Stats::refused.
    std::atomic<std::uint64_t> refused{0};
};

struct Session::Impl {
    api::Core core;  // one slot: this conversation
    // The conversation so far, as the context has taken it in: every prompt's ids and every
    // answer token that was decoded, and the prompts' images. Each generate() resends it ahead
    // of the new prompt; the Engine finds it in the slot's KV (prefix reuse) and prefills only
    // the new ids, so the slot's KV is a cache of this record, never the only copy.
    std::vector<std::int32_t> held_ids;
    std::vector<image::PreprocessedImage> held_images;
};

}  // namespace qvl
