// --draw-boxes: the grounding items of one image drawn onto it, one colour per item (boxes as
// outlines, points as filled discs), so a person can check what the model found. Labels are
// listed in --json (`boxes`); the picture carries no text.
#pragma once

#include <qvl/qvl.h>

#include <vector>

#include "grounding.h"

namespace qvl::app {

// Draws the items whose `image` is image_index onto *image (pixel coordinates as converted by
// find_grounding for this image's size). Line width grows with the image (1/250 of its shorter
// side, at least 2 pixels); everything is clipped to the image.
void draw_grounding(const std::vector<GroundingItem>& items, int image_index, RgbImage* image);

}  // namespace qvl::app
