#include "runtime/image_cache.h"

namespace qvl::runtime {

namespace {

class Fnv {
  public:
    explicit Fnv(std::uint64_t basis) : h_(basis) {}
    void mix(const void* data, std::size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 1099511628211ull;
    }
    std::uint64_t value() const { return h_; }

  private:
    std::uint64_t h_;
};

std::uint64_t hash_with(std::uint64_t basis, const image::PreprocessedImage& im) {
    Fnv f(basis);
    // A video frame's features equal a still image's of the same pixels, but its tokens are
    // <|video_pad|>: the flag is part of its identity (prefix reuse, the cache's entry).
    const int dims[] = {im.grid_t,         im.grid_h,        im.grid_w,
                        im.resized_height, im.resized_width, int(im.video_frame)};
    f.mix(dims, sizeof dims);
    if (!im.resized.rgb.empty()) {
        f.mix(im.resized.rgb.data(), im.resized.rgb.size());
    } else {
        f.mix(im.pixel_values.data(), im.pixel_values.size() * sizeof(float));
    }
    return f.value();
}

std::size_t entry_bytes(const std::vector<float>& levels) { return levels.size() * sizeof(float); }

}  // namespace

ImageKey image_key(const image::PreprocessedImage& image) {
    return {.a = hash_with(14695981039346656037ull, image),
            .b = hash_with(0x9e3779b97f4a7c15ull, image)};
}

const std::vector<float>* ImageFeatureCache::find(const ImageKey& key,
                                                  const model::ImageGrid& grid) {
    const auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    const Entry& e = *it->second;
    if (e.grid.t != grid.t || e.grid.h != grid.h || e.grid.w != grid.w) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return &lru_.front().levels;
}

void ImageFeatureCache::insert(const ImageKey& key, const model::ImageGrid& grid,
                               std::vector<float> levels) {
    const std::size_t need = entry_bytes(levels);
    if (need > max_bytes_) return;
    if (const auto it = map_.find(key); it != map_.end()) {
        bytes_ -= entry_bytes(it->second->levels);
        lru_.erase(it->second);
        map_.erase(it);
    }
    while (bytes_ + need > max_bytes_ && !lru_.empty()) {
        bytes_ -= entry_bytes(lru_.back().levels);
        map_.erase(lru_.back().key);
        lru_.pop_back();
    }
    lru_.push_front({.key = key, .grid = grid, .levels = std::move(levels)});
    map_[key] = lru_.begin();
    bytes_ += need;
}

}  // namespace qvl::runtime
