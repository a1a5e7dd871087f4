#include "model/model.h"

#include <algorithm>
#include <cstdint>
#include <thread>

#include "base/cpu_budget.h"
#include "io/mapped_file.h"

namespace qvl::model {

base::Status check_preprocess_matches_vision(const image::PreprocessConfig& config,
                                             const VisionConfig& vision, std::string_view file) {
    if (config.patch_size != vision.patch_size ||
        config.temporal_patch_size != vision.temporal_patch_size ||
        config.merge_size != vision.spatial_merge_size) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "{}: patch_size {} / temporal_patch_size {} / merge_size {} differ from "
                           "the model's vision_config ({} / {} / {})",
                           file, config.patch_size, config.temporal_patch_size, config.merge_size,
                           vision.patch_size, vision.temporal_patch_size,
                           vision.spatial_merge_size);
    }
    return {};
}

namespace {

constexpr const char* kVideoPreprocessFile = "video_preprocessor_config.json";

// Without the video file the processor's defaults hold for the sampling and the clip budget;
// patch sizes, mean and std are the image processor's (one vision tower reads both).
base::Result<image::VideoPreprocessConfig> load_video_config(
    const std::filesystem::path& dir, const image::PreprocessConfig& image_config) {
    const std::filesystem::path path = dir / kVideoPreprocessFile;
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return image::load_video_preprocess_config(path);
    image::VideoPreprocessConfig video;
    const image::PreprocessConfig budget = video.base;
    video.base = image_config;
    video.base.min_pixels = budget.min_pixels;
    video.base.max_pixels = budget.max_pixels;
    return video;
}

}  // namespace

base::Result<std::unique_ptr<Model>> Model::load(const std::filesystem::path& dir,
                                                 const LoadOptions& options) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) {
        return base::error(base::ErrorCode::kNotFound, "{}: model folder does not exist",
                           dir.string());
    }
    if (!std::filesystem::is_directory(dir, ec)) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "{}: is a file; -m takes the model folder", dir.string());
    }
    QVL_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(dir / "config.json"));
    // The small files first: a bad one fails fast, before seconds of weight work, and the
    // tokenizer's parse (tens of MB, transient) peaks before the weight copies exist.
    QVL_ASSIGN_OR_RETURN(text::Tokenizer tokenizer, text::Tokenizer::load(dir));
    const std::filesystem::path preprocess_path = dir / "preprocessor_config.json";
    QVL_ASSIGN_OR_RETURN(image::PreprocessConfig preprocess,
                         image::load_preprocess_config(preprocess_path));
    QVL_TRY(check_preprocess_matches_vision(preprocess, config.vision, preprocess_path.string()));
    QVL_ASSIGN_OR_RETURN(image::VideoPreprocessConfig video, load_video_config(dir, preprocess));
    QVL_TRY(check_preprocess_matches_vision(video.base, config.vision,
                                            (dir / kVideoPreprocessFile).string()));
    QVL_ASSIGN_OR_RETURN(GenerationConfig generation,
                         load_generation_config(dir / "generation_config.json"));
    QVL_ASSIGN_OR_RETURN(ModelWeights weights, ModelWeights::load(dir, config));
    std::unique_ptr<QuantizedText> quantized;
    if (options.weights == WeightFormat::kQ8) {
        QVL_ASSIGN_OR_RETURN(quantized, QuantizedText::quantize(weights, options.q8));
    } else if (options.weights == WeightFormat::kQ4) {
        QVL_ASSIGN_OR_RETURN(quantized, QuantizedText::quantize(weights, options.q4));
    }
    std::unique_ptr<QuantizedText> quantized_vision;
    if (options.vision_q8) {
        QVL_ASSIGN_OR_RETURN(quantized_vision,
                             QuantizedText::quantize_vision(weights, options.vision));
    }
    const int threads = options.threads > 0 ? options.threads : base::default_threads();
    std::unique_ptr<LogitsScreen> screen;
    const Matrix& lm_head = weights.text().lm_head;
    if (options.logits_screen && options.weights == WeightFormat::kBF16 &&
        lm_head.type == kernels::WeightType::kBF16) {
        QVL_ASSIGN_OR_RETURN(screen, LogitsScreen::build(lm_head, kLogitsScreenBlock, threads));
        // From here on a step reads a few rows of the bf16 matrix (the tied embedding too):
        // hand its pages back, as the int8 decoder does with its sources (model/quantize.h).
        if (!weights.is_copy(lm_head.data)) {
            io::release_mapped_pages(lm_head.data,
                                     (std::size_t(lm_head.rows - 1) * std::size_t(lm_head.ld) +
                                      std::size_t(lm_head.cols)) *
                                         sizeof(std::uint16_t));
        }
    }
    std::unique_ptr<PanelWeights> panels;
    if (options.panels) {
        QVL_ASSIGN_OR_RETURN(panels,
                             PanelWeights::rearrange(weights, threads, true, screen == nullptr));
    }
    // Cold start: read the weights ahead in the order of use while the rest loads and the caller
    // decodes the image and runs the vision tower (the text decoder's weights are needed only
    // after it). After quantization and the panel rearrangement, so that released bf16 pages are
    // not read back in (the copies are resident already). Moving `weights` keeps the views it reads
    // valid; declared after `weights`, it stops before they are unmapped on every path.
    auto prefetch = std::make_unique<WeightPrefetch>(
        options.read_ahead ? weights_in_use_order(weights, screen == nullptr)
                           : std::vector<ByteRange>{});
    auto model = std::unique_ptr<Model>(new Model(std::move(config), std::move(weights),
                                                  std::move(tokenizer), preprocess,
                                                  std::move(generation), dir));
    model->video_preprocess_ = video;
    model->quantized_ = std::move(quantized);
    model->quantized_vision_ = std::move(quantized_vision);
    model->panels_ = std::move(panels);
    model->screen_ = std::move(screen);
    model->prefetch_ = std::move(prefetch);
    return model;
}

}  // namespace qvl::model
