// PNG encoding of an RGB image (libspng), for the pictures qvl writes for people (grounding
// boxes drawn on the input image).
#pragma once

#include <filesystem>

#include "base/status.h"
#include "io/image.h"

namespace qvl::io {

// Writes `image` (8-bit RGB, rgb.size() == width * height * 3, sides >= 1) as a PNG file.
// kInvalidArgument for an inconsistent image; kIo naming the path when it cannot be written.
base::Status write_png(const std::filesystem::path& path, const Image& image);

}  // namespace qvl::io
