// Between the public API's std-only types (include/qvl/qvl.h) and the engine's: statuses,
// options, messages. The adapter layer is thin on purpose: everything here is a field mapping.
#pragma once

#include <vector>

#include "base/status.h"
#include "io/video.h"
#include "qvl/qvl.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "text/chat_template.h"

namespace qvl::api {

Status from_engine(const base::Status& status);

// kInvalidArgument for an unknown isa name.
base::Result<runtime::SessionOptions> to_engine(const SessionOptions& options);

Precision from_engine(runtime::Precision precision);

// The messages as the chat template sees them (image parts keep their path or name).
std::vector<text::ChatMessage> to_engine(const std::vector<Message>& messages);

// Decodes (or copies) an image part under `limits`; a kImageUrl part goes through `resolve`
// first (unset: file:// URLs only).
base::Result<io::Image> load_image_part(const ContentPart& part, const io::ImageLimits& limits,
                                        const MediaResolver& resolve);

// Decodes the frames `sample` picks of a video part under `limits`; a kVideoUrl part goes
// through `resolve` first (unset: file:// URLs only).
base::Result<io::Video> load_video_part(const ContentPart& part, const io::VideoLimits& limits,
                                        const MediaResolver& resolve,
                                        const io::FrameSampler& sample);

// The index-th image part (video: video part) of `messages`, or nullptr.
const ContentPart* media_part(const std::vector<Message>& messages, int index, bool video);

io::ImageLimits to_engine(const ImageLimits& limits);
// The video limits of an engine with these image limits whose slots hold ctx_size tokens: a
// frame's pixels within both limits, at most two frames (one pair, at least one token) per
// context token, the file within max_file_bytes.
io::VideoLimits video_limits(const ImageLimits& limits, int ctx_size);

}  // namespace qvl::api
