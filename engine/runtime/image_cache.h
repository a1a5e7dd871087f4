// Image-feature cache: the vision tower's output (merger and deepstack levels) for images seen
// recently, keyed by a hash of what the tower sees (resized pixels and grid, which include the
// preprocessing settings), bounded in bytes, least recently used out. A second question about
// the same picture, in any slot, skips the vision tower. Not thread-safe (the scheduler's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "image/image_preprocess.h"
#include "model/mrope.h"

namespace qvl::runtime {

// Two independent 64-bit FNV-1a hashes of the image as the vision tower sees it.
struct ImageKey {
    std::uint64_t a = 0, b = 0;
    bool operator==(const ImageKey& o) const { return a == o.a && b == o.b; }
};
ImageKey image_key(const image::PreprocessedImage& image);

class ImageFeatureCache {
  public:
    explicit ImageFeatureCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}

    // The cached levels of key with that grid (and marks them recently used), or null.
    const std::vector<float>* find(const ImageKey& key, const model::ImageGrid& grid);
    // Keeps levels for key, evicting the least recently used entries to stay within the bound;
    // an entry larger than the bound is not kept.
    void insert(const ImageKey& key, const model::ImageGrid& grid, std::vector<float> levels);
    std::size_t bytes() const { return bytes_; }
    std::size_t size() const { return map_.size(); }

  private:
    struct Entry {
        ImageKey key;
        model::ImageGrid grid;
        std::vector<float> levels;
    };
    struct KeyHash {
        std::size_t operator()(const ImageKey& k) const { return std::size_t(k.a ^ (k.b << 1)); }
    };
    std::size_t max_bytes_;
    std::size_t bytes_ = 0;
    std::list<Entry> lru_;  // most recent first
    std::unordered_map<ImageKey, std::list<Entry>::iterator, KeyHash> map_;
};

}  // namespace qvl::runtime
