// From a conversation to what the Engine runs: prompt preparation (chat template, image
// decoding and preprocessing, image-pad expansion; the public API's one road from messages to a
// prompt is prepare_chat_prompt_with) and the generation settings of a request. The generation
// loop itself is the Engine's (runtime/engine.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "image/image_preprocess.h"
#include "image/video_preprocess.h"
#include "io/image.h"
#include "io/video.h"
#include "runtime/logprobs.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "text/chat_template.h"

namespace qvl::runtime {

// One image or video of the prompt, in prompt order.
struct ImageInfo {
    std::string path;
    int width = 0, height = 0;
    int resized_width = 0, resized_height = 0;
    int tokens = 0;
    // A video: frames sampled, the stream's frame rate and length (its metadata), and the
    // sampling it was prepared with.
    bool video = false;
    int frames = 0, frame_pairs = 0;  // frame_pairs: its entries in PreparedPrompt::images
    double fps = 0, duration_s = 0, sample_fps = 0;
    int max_frames = 0;
};

struct PreparedPrompt {
    std::vector<std::int32_t> ids;  // expanded: one <|image_pad|> per visual token
    // In prompt order; a video is one image per temporal patch (video_frames_as_images).
    std::vector<image::PreprocessedImage> images;
    std::vector<ImageInfo> infos;
    double image_decode_ms = 0, preprocess_ms = 0;
};

// Renders the chat template, loads and preprocesses every image part, tokenizes and expands
// the image pads. `preprocess` is effective_preprocess() of the session that will run it. Image
// errors name the file (kNotFound, kCorruptFile, kOutOfRange, ...).
base::Result<PreparedPrompt> prepare_chat_prompt(const model::Model& model,
                                                 std::span<const text::ChatMessage> messages,
                                                 const image::PreprocessConfig& preprocess,
                                                 const io::ImageLimits& limits);
// The same, with the images supplied by the caller: load(i, part) returns the decoded image of
// the i-th image part (already in memory, decoded from bytes, ...); its errors pass through.
// part.image_path names the image in infos and messages.
using ImageLoader = std::function<base::Result<io::Image>(int index, const text::ChatPart& part)>;
// Video parts: load(i, part, sample) decodes the i-th video part with the frames `sample`
// picks; its errors pass through. config is the model's video_preprocess() (the part's fps and
// max_frames override its sampling); a clip whose frame pairs would exceed max_frame_tokens
// (the session's per-image budget, what its vision scratch holds) is resized to fit it (the
// reference's size otherwise).
using VideoLoader = std::function<base::Result<io::Video>(int index, const text::ChatPart& part,
                                                          const io::FrameSampler& sample)>;
struct VideoRoad {
    image::VideoPreprocessConfig config;
    int max_frame_tokens = 0;
    VideoLoader load;
};
// tools: the functions offered (rendered into the system turn as the template does);
// add_generation_prompt false leaves the assistant turn unopened (/tokenize). Without `video`
// a video part is kUnsupported.
base::Result<PreparedPrompt> prepare_chat_prompt_with(const model::Model& model,
                                                      std::span<const text::ChatMessage> messages,
                                                      const image::PreprocessConfig& preprocess,
                                                      const ImageLoader& load,
                                                      std::span<const text::ChatTool> tools = {},
                                                      bool add_generation_prompt = true,
                                                      const VideoRoad* video = nullptr);
// Raw text (no template, no images); special tokens written in the text are recognised.
base::Result<PreparedPrompt> prepare_raw_prompt(const model::Model& model, std::string_view text);

struct GenerateParams {
    int n_predict = 128;
    bool ignore_eos = false;
    SamplingParams sampling;
    // OpenAI's logprobs: -1 off; 0..kMaxTopLogprobs: each generated token's log-probability and
    // that many alternatives (runtime/logprobs.h). The slot then computes every logit each step.
    int top_logprobs = -1;
    std::vector<std::int32_t> stop_ids;  // end-of-turn ids (generation_config eos + <|im_end|>)
    // When set, the answer follows this grammar (grammar/matcher.h): every token is one it
    // allows, and the turn ends only where it may end (then only there: finish_reason "stop").
    std::shared_ptr<const grammar::Grammar> grammar;
    // When set, the grammar starts with the first generated token whose text this is (which the
    // grammar must begin with): free text until then, e.g. tool calls under tool_choice "auto".
    std::string grammar_trigger;
    // When set and it becomes true (e.g. from a SIGINT handler), generation stops after the
    // current step with finish_reason "interrupted"; the text so far is kept.
    const std::atomic<bool>* cancel = nullptr;
};

// The stop ids a model's generation config implies (plus <|im_end|> and <|endoftext|>).
std::vector<std::int32_t> default_stop_ids(const model::Model& model);

}  // namespace qvl::runtime
