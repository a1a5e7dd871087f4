// Between the public API's std-only types (include/qvl/qvl.h) and the engine's: statuses,
// options, messages. The adapter layer is thin on purpose: everything here is a field mapping.
#pragma once

#include <vector>

#include "base/status.h"
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

// The index-th image part of `messages`, or nullptr.
const ContentPart* image_part(const std::vector<Message>& messages, int index);

io::ImageLimits to_engine(const ImageLimits& limits);

}  // namespace qvl::api
