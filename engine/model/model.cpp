#include "model/model.h"

namespace qvl::model {

base::Result<std::unique_ptr<Model>> Model::load(const std::filesystem::path& dir) {
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
    QVL_ASSIGN_OR_RETURN(ModelWeights weights, ModelWeights::load(dir, config));
    QVL_ASSIGN_OR_RETURN(Tokenizer tokenizer, Tokenizer::load(dir));
    const std::filesystem::path preprocess_path = dir / "preprocessor_config.json";
    QVL_ASSIGN_OR_RETURN(PreprocessConfig preprocess, load_preprocess_config(preprocess_path));
    QVL_TRY(check_preprocess_matches_vision(preprocess, config.vision, preprocess_path.string()));
    QVL_ASSIGN_OR_RETURN(GenerationConfig generation,
                         load_generation_config(dir / "generation_config.json"));
    return std::unique_ptr<Model>(new Model(std::move(config), std::move(weights),
                                            std::move(tokenizer), preprocess, std::move(generation),
                                            dir));
}

}  // namespace qvl::model
