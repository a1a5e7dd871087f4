// qvl::Model, qvl::Prompt and ContentPart of the public header: owners of engine objects.
#include <exception>

#include "api/convert.h"
#include "api/internals.h"
#include "base/version.h"

namespace qvl {

Result<Model> Model::load(const std::string& dir, const ModelOptions& options) {
    try {
        base::Result<std::unique_ptr<model::Model>> m = model::Model::load(
            dir, {.weights = options.weights == Weights::kQ8   ? model::WeightFormat::kQ8
                             : options.weights == Weights::kQ4 ? model::WeightFormat::kQ4
                                                               : model::WeightFormat::kBF16,
                  .vision_q8 = options.vision_weights == VisionWeights::kQ8});
        if (!m.ok()) return api::from_engine(m.status());
        auto impl = std::make_shared<Impl>();
        impl->model = std::move(m).value();
        impl->dir = dir;
        return Model(std::move(impl));
    } catch (const std::exception& e) {
        return Status(ErrorCode::kResourceExhausted, std::string("loading the model: ") + e.what());
    }
}

const std::string& Model::dir() const { return impl_->dir; }
int Model::vocab_size() const { return impl_->model->config().text.vocab_size; }

ContentPart ContentPart::from_text(std::string text) {
    return {.kind = Kind::kText, .text = std::move(text)};
}
ContentPart ContentPart::image_file(std::string path) {
    return {.kind = Kind::kImageFile, .path = std::move(path)};
}
ContentPart ContentPart::image_bytes(std::vector<std::uint8_t> bytes, std::string name) {
    return {.kind = Kind::kImageBytes, .path = std::move(name), .data = std::move(bytes)};
}
ContentPart ContentPart::image_rgb(int width, int height, std::vector<std::uint8_t> rgb,
                                   std::string name) {
    return {.kind = Kind::kImageRgb,
            .path = std::move(name),
            .data = std::move(rgb),
            .width = width,
            .height = height};
}

Prompt::Prompt(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Prompt::Prompt(Prompt&&) noexcept = default;
Prompt& Prompt::operator=(Prompt&&) noexcept = default;
Prompt::~Prompt() = default;
const std::vector<std::int32_t>& Prompt::token_ids() const { return impl_->prepared.ids; }
const std::vector<ImageInfo>& Prompt::images() const { return impl_->infos; }
double Prompt::image_decode_ms() const { return impl_->prepared.image_decode_ms; }
double Prompt::preprocess_ms() const { return impl_->prepared.preprocess_ms; }

const char* version() { return base::version(); }

}  // namespace qvl
