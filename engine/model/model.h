// Model: everything read from a Hugging Face Qwen3-VL folder — config, mmap'd weights,
// tokenizer, preprocessor and generation settings. Immutable after load; sessions borrow it.
#pragma once

#include <filesystem>
#include <memory>

#include "base/status.h"
#include "image/image_preprocess.h"
#include "image/video_preprocess.h"
#include "model/config.h"
#include "model/logits_screen.h"
#include "model/quantize.h"
#include "model/weight_panels_load.h"
#include "model/weight_prefetch.h"
#include "model/weights.h"
#include "text/tokenizer.h"

namespace qvl::model {

// Refuses (kInvalidArgument, naming `file` and both triples) a config whose patch_size /
// temporal_patch_size / merge_size differ from the vision tower's (config.json vision_config):
// its patches would not fit the patch embedding. Model::load calls it.
base::Status check_preprocess_matches_vision(const image::PreprocessConfig& config,
                                             const VisionConfig& vision, std::string_view file);

// How the model is loaded: the text decoder's weight format (kQ8, kQ4: quantized at load, see
// model/quantize.h) with the options of each.
struct LoadOptions {
    WeightFormat weights = WeightFormat::kBF16;
    QuantizeOptions q8;
    QuantizeOptions q4 = q4_defaults();
    // The vision tower's linear weights in int8 (model/quantize.h), independent of `weights`.
    bool vision_q8 = false;
    VisionQuantizeOptions vision;
    // Rearrange the linear layers' bf16 matrices into panels at load (model/weight_panels_load.h).
    // Off only to measure or test the stored layout.
    bool panels = true;
    int threads = 0;  // workers for the rearrangement; 0: one per CPU (at most 8)
    // With bf16 text weights and a bf16 lm_head: an int8 copy of lm_head that bounds every
    // logit (model/logits_screen.h), so greedy and top-k steps compute only the few rows that
    // can win. Off to measure without it.
    bool logits_screen = true;
    // Read the mapped weights ahead in the background (weight_prefetch.h). Off for a process
    // that will not run the model (a dry run measures its own memory).
    bool read_ahead = true;
};

class Model {
  public:
    // Errors name the folder or file: a missing folder or config is kNotFound, a bad file
    // kCorruptFile/kInvalidArgument/kUnsupported.
    static base::Result<std::unique_ptr<Model>> load(const std::filesystem::path& dir,
                                                     const LoadOptions& options = {});

    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    const text::Tokenizer& tokenizer() const { return tokenizer_; }
    const image::PreprocessConfig& preprocess() const { return preprocess_; }
    // video_preprocessor_config.json, or Qwen3VLVideoProcessor's defaults (patch sizes, mean
    // and std then from preprocessor_config.json) when the folder has none.
    const image::VideoPreprocessConfig& video_preprocess() const { return video_preprocess_; }
    const GenerationConfig& generation() const { return generation_; }
    const std::filesystem::path& dir() const { return dir_; }
    WeightFormat weight_format() const {
        return quantized_ != nullptr ? quantized_->format() : WeightFormat::kBF16;
    }
    // Bytes of the int8 / 4-bit copies (0 for kBF16).
    std::size_t quantized_bytes() const { return quantized_ ? quantized_->bytes() : 0; }
    // Whether the vision tower's linear weights are int8 (LoadOptions::vision_q8).
    bool vision_q8() const { return quantized_vision_ != nullptr; }
    // Bytes of the rearranged bf16 panels (0 when off).
    std::size_t panel_bytes() const { return panels_ ? panels_->bytes() : 0; }
    // The logits screen, or null (kQ8 weights, an lm_head in another format, or turned off).
    const LogitsScreen* logits_screen() const { return screen_.get(); }
    // The background read-ahead of the weights started by load() (weight_prefetch.h).
    const WeightPrefetch& prefetch() const { return *prefetch_; }

  private:
    Model(ModelConfig config, ModelWeights weights, text::Tokenizer tokenizer,
          image::PreprocessConfig preprocess, GenerationConfig generation,
          std::filesystem::path dir)
        : config_(std::move(config)),
          weights_(std::move(weights)),
          tokenizer_(std::move(tokenizer)),
          preprocess_(preprocess),
          generation_(std::move(generation)),
          dir_(std::move(dir)) {}

    ModelConfig config_;
    ModelWeights weights_;
    text::Tokenizer tokenizer_;
    image::PreprocessConfig preprocess_;
    image::VideoPreprocessConfig video_preprocess_;
    GenerationConfig generation_;
    std::filesystem::path dir_;
    std::unique_ptr<QuantizedText> quantized_;         // the weights_ text matrices point into it
    std::unique_ptr<QuantizedText> quantized_vision_;  // the vision matrices point into it
    std::unique_ptr<PanelWeights> panels_;             // likewise
    std::unique_ptr<LogitsScreen> screen_;
    // Last: stopped and joined before the weights it reads are unmapped.
    std::unique_ptr<WeightPrefetch> prefetch_;
};

}  // namespace qvl::model
