#include "draw_boxes.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace qvl::app {
namespace {

// Saturated colours that stay distinct from each other and from most photos.
constexpr std::array<std::array<std::uint8_t, 3>, 8> kPalette = {{{230, 25, 75},
                                                                  {60, 180, 75},
                                                                  {0, 130, 200},
                                                                  {245, 130, 48},
                                                                  {145, 30, 180},
                                                                  {70, 240, 240},
                                                                  {240, 50, 230},
                                                                  {255, 225, 25}}};

void fill_rect(RgbImage* im, int x0, int y0, int x1, int y1, const std::array<std::uint8_t, 3>& c) {
    x0 = std::max(x0, 0);
    y0 = std::max(y0, 0);
    x1 = std::min(x1, im->width);
    y1 = std::min(y1, im->height);
    for (int y = y0; y < y1; ++y) {
        std::uint8_t* row = im->rgb.data() + std::size_t(y) * im->width * 3;
        for (int x = x0; x < x1; ++x) std::copy(c.begin(), c.end(), row + std::size_t(x) * 3);
    }
}

}  // namespace

void draw_grounding(const std::vector<GroundingItem>& items, int image_index, RgbImage* image) {
    const int width = std::max(2, std::min(image->width, image->height) / 250);
    int colour = 0;
    for (const GroundingItem& it : items) {
        if (it.image != image_index) continue;
        const auto& c = kPalette[colour++ % kPalette.size()];
        if (it.bbox_px.size() == 4) {
            const int x1 = it.bbox_px[0], y1 = it.bbox_px[1];
            const int x2 = it.bbox_px[2], y2 = it.bbox_px[3];
            fill_rect(image, x1, y1, x2, y1 + width, c);  // top
            fill_rect(image, x1, y2 - width, x2, y2, c);  // bottom
            fill_rect(image, x1, y1, x1 + width, y2, c);  // left
            fill_rect(image, x2 - width, y1, x2, y2, c);  // right
        }
        if (it.point_px.size() == 2) {
            const int r = 3 * width, cx = it.point_px[0], cy = it.point_px[1];
            for (int dy = -r; dy <= r; ++dy) {
                for (int dx = -r; dx <= r; ++dx) {
                    if (dx * dx + dy * dy <= r * r)
                        fill_rect(image, cx + dx, cy + dy, cx + dx + 1, cy + dy + 1, c);
                }
            }
        }
    }
}

}  // namespace qvl::app
