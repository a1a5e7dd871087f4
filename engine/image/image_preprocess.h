// Qwen2-VL/Qwen3-VL image preprocessing, bit-exact with Hugging Face's default fast processor
// (Qwen2VLImageProcessorFast on CPU; qwen3vl-spec.md section 3, oracle qwen3vl_ref.py
// preprocess_image): smart_resize, antialiased bicubic resize on uint8 (PyTorch's native uint8
// path), rescale+normalise in float32, temporal duplication, patches in merge-window order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "io/image.h"

namespace qvl::image {

struct PreprocessConfig {
    int patch_size = 16;
    int temporal_patch_size = 2;
    int merge_size = 2;
    std::int64_t min_pixels = 65536;
    std::int64_t max_pixels = 16777216;
    float image_mean[3] = {0.5f, 0.5f, 0.5f};
    float image_std[3] = {0.5f, 0.5f, 0.5f};
    // false: preprocess_image leaves pixel_values empty when the vision tower can gather
    // patches from the resized image itself (the fused patch embedding, which needs
    // fused_patch_embed_possible); true always builds the HF matrix.
    bool pixel_values = true;
};

// Visual tokens of an image of grid_t x grid_h x grid_w patches: each merge_size x merge_size
// window of patches becomes one token (HF Qwen3VLProcessor: t * h * w / merge^2). The one place
// this count is computed; everything else asks here.
int visual_token_count(int grid_t, int grid_h, int grid_w, int merge_size);

// Pixels of the resized image one visual token stands for: (patch_size * merge_size)^2.
std::int64_t pixels_per_visual_token(const PreprocessConfig& config);

// The most visual tokens an image can become under `config` (max_pixels / pixels per token).
int max_visual_tokens(const PreprocessConfig& config);

// True when the three channels share one mean and one std, so that one 256-entry table
// normalises every byte and the vision tower can embed patches straight from the resized image.
// Otherwise preprocess_image builds pixel_values whatever config.pixel_values says, and the
// vision tower takes them (the unfused path). The one place this decision is made.
bool fused_patch_embed_possible(const PreprocessConfig& config);

// Reads preprocessor_config.json: size.shortest_edge / size.longest_edge, overridden by
// top-level min_pixels / max_pixels when present (as HF does), patch_size, temporal_patch_size,
// merge_size, image_mean, image_std (3 numbers or one). Keys absent -> the defaults above; a
// missing file -> all defaults. Values of the wrong type or out of range (sizes < 1 or > 1024,
// min_pixels < 1, max_pixels < min_pixels, std 0, non-finite numbers), and do_resize /
// do_rescale / do_normalize false or a rescale_factor other than 1/255 -> an error naming the
// file and the key (kInvalidArgument, or kUnsupported for the do_* switches).
base::Result<PreprocessConfig> load_preprocess_config(const std::filesystem::path& path);

// HF smart_resize: rounds each side to a multiple of `factor` (Python round, half to even, so
// 1280x720 -> 1280x704), then rescales into [min_pixels, max_pixels] keeping the aspect ratio.
// Returns {height, width}. Aspect ratio over 200, non-positive sizes or a result side below
// `factor` (only possible with min_pixels < 1) -> kInvalidArgument. Sides smaller than
// `factor` are accepted, as current HF does (1x1 -> 256x256 with min_pixels 65536).
base::Result<std::pair<int, int>> smart_resize(int height, int width, int factor,
                                               std::int64_t min_pixels, std::int64_t max_pixels);

// Antialiased bicubic (Keys a = -0.5) resize of an RGB image, bit-exact with PyTorch's uint8
// path (int16 weights at a per-axis precision, width pass first, uint8 between passes; an axis
// whose size is unchanged is skipped, and an unchanged size is a plain copy). Sizes >= 1.
io::Image resize_bicubic_aa(const io::Image& src, int out_height, int out_width);

struct PreprocessedImage {
    int resized_height = 0, resized_width = 0;
    int grid_t = 1, grid_h = 0, grid_w = 0;  // in patches
    int merge_size = 2;
    io::Image resized;  // the resized RGB image (for a fused patch-embed kernel)
    // [grid_t*grid_h*grid_w, 3*temporal*patch*patch]: rows in merge-window order (window row,
    // window column, row in window, column in window), each row laid out (channel, t, y, x).
    std::vector<float> pixel_values;
    // One temporal patch of a video (video_preprocess.h video_frames_as_images): its tokens are
    // <|video_pad|> instead of <|image_pad|>, and it comes with pixel_values only.
    bool video_frame = false;
    int num_patches() const { return grid_t * grid_h * grid_w; }
    int num_image_tokens() const { return visual_token_count(grid_t, grid_h, grid_w, merge_size); }
};

// The whole pipeline for one decoded image. Overrides of min/max pixels (e.g. from
// --image-min-tokens: tokens * (patch*merge)^2) are applied by the caller on a config copy.
// Errors: those of smart_resize (kInvalidArgument naming the image size).
base::Result<PreprocessedImage> preprocess_image(const io::Image& image,
                                                 const PreprocessConfig& config);

// preprocess_image into *out, reusing the storage of out->resized and out->pixel_values when it
// is large enough: a program that preprocesses many images (a server) keeps one
// PreprocessedImage (and one io::Image for io::decode_image_into), and only an image larger
// than any before it allocates and page-faults new memory; the results are bit-identical to
// preprocess_image's. `image` must not be out->resized. On error *out is left empty (no pixels,
// grid 0x0, storage kept).
base::Status preprocess_image_into(const io::Image& image, const PreprocessConfig& config,
                                   PreprocessedImage* out);

// lut[c][x] = (float(x) - float(mean[c] * 255)) / float(std[c] * 255) in float32, as the HF fast
// processor's fused rescale+normalise computes it (mean*255 and std*255 in double, then f32).
void normalization_lut(const PreprocessConfig& config, float lut[3][256]);

}  // namespace qvl::image
