// Grounding answers: Qwen3-VL answers "where is ..." / "detect ..." with JSON such as
// [{"bbox_2d": [x1, y1, x2, y2], "label": "cat"}] or [{"point_2d": [x, y], "label": "..."}], in
// coordinates relative to 0..1000 of the image. This finds those objects in an answer (inside
// code fences, surrounded by prose, or cut short by -n) and converts them to the original
// image's pixels, which no peer does for its users.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::app {

struct GroundingItem {
    std::string label;  // "" when the object has none
    int image = 0;      // index of the image the coordinates refer to (see find_grounding)
    std::optional<std::vector<double>> bbox_2d;   // as given: x1, y1, x2, y2 in 0..1000
    std::optional<std::vector<double>> point_2d;  // as given: x, y in 0..1000
    std::vector<int> bbox_px;                     // x1, y1, x2, y2 in pixels (when bbox_2d)
    std::vector<int> point_px;                    // x, y in pixels (when point_2d)
};

struct ImageSize {
    int width = 0, height = 0;
};

// Every JSON object in `answer` that carries a well-formed "bbox_2d" (4 numbers) or "point_2d"
// (2 numbers), in order of appearance. Objects that do not parse (a truncated tail, prose that
// merely contains braces) and malformed coordinates are skipped, never an error. An object
// refers to image 0 unless it has an integer "image" (or "image_index") field naming one of the
// `images`; an index out of range drops the object. Pixel coordinates are
// round(v / 1000 * side) (half away from zero), clamped to [0, side]; x1 <= x2 and y1 <= y2
// after swapping reversed corners.
std::vector<GroundingItem> find_grounding(std::string_view answer,
                                          const std::vector<ImageSize>& images);

// The items as a JSON array for the --json report ("boxes").
std::string grounding_json(const std::vector<GroundingItem>& items);

}  // namespace qvl::app
