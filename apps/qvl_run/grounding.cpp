#include "grounding.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "json_out.h"

namespace qvl::app {
namespace {

// The spans of every balanced {...} in text, innermost first, skipping braces inside JSON
// strings. An unbalanced tail (an answer cut by -n) yields nothing for the open objects.
std::vector<std::string_view> object_spans(std::string_view text) {
    std::vector<std::string_view> spans;
    std::vector<std::size_t> open;
    bool in_string = false, escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"' && !open.empty()) {
            in_string = true;
        } else if (c == '{') {
            open.push_back(i);
        } else if (c == '}' && !open.empty()) {
            spans.push_back(text.substr(open.back(), i + 1 - open.back()));
            open.pop_back();
        }
    }
    return spans;
}

std::optional<std::vector<double>> numbers(const JsonValue* v, std::size_t count) {
    if (v == nullptr || !v->is_array() || v->items().size() != count) return std::nullopt;
    std::vector<double> out;
    for (const JsonValue& x : v->items()) {
        if (!x.is_number() || !std::isfinite(x.as_double())) return std::nullopt;
        out.push_back(x.as_double());
    }
    return out;
}

int to_pixels(double v, int side) {
    const double px = std::round(v / 1000.0 * side);  // std::round: half away from zero
    return int(std::clamp(px, 0.0, double(side)));
}

std::string number_list(const std::vector<double>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", v[i]);
    return out + "]";
}

std::string int_list(const std::vector<int>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", v[i]);
    return out + "]";
}

}  // namespace

std::vector<GroundingItem> find_grounding(std::string_view answer,
                                          const std::vector<ImageSize>& images) {
    std::vector<std::pair<std::size_t, GroundingItem>> found;  // (offset, item)
    for (std::string_view span : object_spans(answer)) {
        Result<JsonValue> parsed = parse_json(span, "answer");
        if (!parsed.ok() || !parsed.value().is_object()) continue;
        const JsonValue& obj = parsed.value();
        GroundingItem item;
        item.bbox_2d = numbers(obj.find("bbox_2d"), 4);
        item.point_2d = numbers(obj.find("point_2d"), 2);
        if (!item.bbox_2d && !item.point_2d) continue;
        if (const JsonValue* label = obj.find("label"); label && label->is_string()) {
            item.label = label->as_string();
        }
        const JsonValue* index = obj.find("image");
        if (index == nullptr) index = obj.find("image_index");
        if (index != nullptr) {
            if (!index->is_integer()) continue;
            item.image = int(std::clamp<std::int64_t>(index->as_int(), -1, 1 << 20));
        }
        if (item.image < 0 || item.image >= int(images.size())) continue;
        const ImageSize size = images[item.image];
        if (item.bbox_2d) {
            const std::vector<double>& b = *item.bbox_2d;
            int x1 = to_pixels(b[0], size.width), y1 = to_pixels(b[1], size.height);
            int x2 = to_pixels(b[2], size.width), y2 = to_pixels(b[3], size.height);
            if (x1 > x2) std::swap(x1, x2);
            if (y1 > y2) std::swap(y1, y2);
            item.bbox_px = {x1, y1, x2, y2};
        }
        if (item.point_2d) {
            item.point_px = {to_pixels((*item.point_2d)[0], size.width),
                             to_pixels((*item.point_2d)[1], size.height)};
        }
        found.emplace_back(std::size_t(span.data() - answer.data()), std::move(item));
    }
    // Spans come innermost-first; the answer's order is what a reader expects.
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<GroundingItem> items;
    items.reserve(found.size());
    for (auto& [offset, item] : found) items.push_back(std::move(item));
    return items;
}

std::string grounding_json(const std::vector<GroundingItem>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
        const GroundingItem& it = items[i];
        out += fmt::format("{}{{\"label\": {}, \"image\": {}", i ? ", " : "", json_quote(it.label),
                           it.image);
        if (it.bbox_2d) {
            out += fmt::format(", \"bbox_2d\": {}, \"bbox_px\": {}", number_list(*it.bbox_2d),
                               int_list(it.bbox_px));
        }
        if (it.point_2d) {
            out += fmt::format(", \"point_2d\": {}, \"point_px\": {}", number_list(*it.point_2d),
                               int_list(it.point_px));
        }
        out += "}";
    }
    return out + "]";
}

}  // namespace qvl::app
