// Model: everything read from a Hugging Face Qwen3-VL folder — config, mmap'd weights,
// tokenizer, preprocessor and generation settings. Immutable after load; sessions borrow it.
#pragma once

#include <filesystem>
#include <memory>

#include "base/status.h"
#include "model/config.h"
#include "model/image_preprocess.h"
#include "model/tokenizer.h"
#include "model/weights.h"

namespace qvl::model {

class Model {
  public:
    // Errors name the folder or file: a missing folder or config is kNotFound, a bad file
    // kCorruptFile/kInvalidArgument/kUnsupported.
    static base::Result<std::unique_ptr<Model>> load(const std::filesystem::path& dir);

    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    const Tokenizer& tokenizer() const { return tokenizer_; }
    const PreprocessConfig& preprocess() const { return preprocess_; }
    const GenerationConfig& generation() const { return generation_; }
    const std::filesystem::path& dir() const { return dir_; }

  private:
    Model(ModelConfig config, ModelWeights weights, Tokenizer tokenizer,
          PreprocessConfig preprocess, GenerationConfig generation, std::filesystem::path dir)
        : config_(std::move(config)),
          weights_(std::move(weights)),
          tokenizer_(std::move(tokenizer)),
          preprocess_(preprocess),
          generation_(std::move(generation)),
          dir_(std::move(dir)) {}

    ModelConfig config_;
    ModelWeights weights_;
    Tokenizer tokenizer_;
    PreprocessConfig preprocess_;
    GenerationConfig generation_;
    std::filesystem::path dir_;
};

}  // namespace qvl::model
