// qvl::Model, qvl::Prompt and ContentPart of the public header: owners of engine objects.
#include <algorithm>
#include <random>

#include "api/convert.h"
#include "api/internals.h"

namespace qvl {

Result<Model> Model::load(const std::string& dir, const ModelOptions& options) {
    return api::guarded<Model>("loading the model", [&]() -> Result<Model> {
        // A model not meant to generate reads no weights: no read-ahead, and the stored layout
        // (the panel rearrangement would make the process hold the text decoder's weights).
        base::Result<std::unique_ptr<model::Model>> m = model::Model::load(
            dir, {.weights = options.weights == Weights::kQ8   ? model::WeightFormat::kQ8
                             : options.weights == Weights::kQ4 ? model::WeightFormat::kQ4
                                                               : model::WeightFormat::kBF16,
                  .vision_q8 = options.vision_weights == VisionWeights::kQ8,
                  .panels = options.for_generation,
                  .logits_screen = options.logits_screen && options.for_generation,
                  .read_ahead = options.for_generation});
        if (!m.ok()) return api::from_engine(m.status());
        auto impl = std::make_shared<Impl>();
        impl->model = std::move(m).value();
        impl->dir = dir;
        return Model(std::move(impl));
    });
}

const std::string& Model::dir() const { return impl_->dir; }
int Model::vocab_size() const { return impl_->model->config().text.vocab_size; }
Weights Model::weights() const {
    switch (impl_->model->weight_format()) {
        case model::WeightFormat::kQ8:
            return Weights::kQ8;
        case model::WeightFormat::kQ4:
            return Weights::kQ4;
        default:
            return Weights::kBF16;
    }
}
int Model::hidden_size() const { return impl_->model->config().text.hidden_size; }
int Model::vision_blocks() const { return impl_->model->config().vision.depth; }
std::string_view Model::token_bytes(std::int32_t id) const {
    if (id < 0 || id >= impl_->model->config().text.vocab_size) return {};
    return impl_->model->tokenizer().token_bytes(id);
}

Result<std::string> Model::detokenize(std::span<const std::int32_t> ids) const {
    const text::Tokenizer& tok = impl_->model->tokenizer();
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= tok.vocab_size()) {
            return Status(ErrorCode::kInvalidArgument,
                          "token " + std::to_string(i) + ": id " + std::to_string(ids[i]) +
                              " is outside the vocabulary of " + std::to_string(tok.vocab_size()) +
                              " ids");
        }
    }
    return tok.decode(ids, /*skip_special=*/false);
}

Sampling Model::sampling(const SamplingOverrides& o) const {
    Sampling s;
    const model::GenerationConfig& gen = impl_->model->generation();
    if (gen.do_sample) {
        s.temperature = gen.temperature;
        s.top_k = gen.top_k;
        s.top_p = gen.top_p;
    }
    // A logits processor, not a sampling warper: Hugging Face applies it to greedy runs too.
    s.repetition_penalty = gen.repetition_penalty;
    s.temperature = o.temperature.value_or(s.temperature);
    s.top_k = o.top_k.value_or(s.top_k);
    s.top_p = o.top_p.value_or(s.top_p);
    s.repetition_penalty = o.repetition_penalty.value_or(s.repetition_penalty);
    s.presence_penalty = o.presence_penalty.value_or(s.presence_penalty);
    s.frequency_penalty = o.frequency_penalty.value_or(s.frequency_penalty);
    s.seed = o.seed ? *o.seed : std::random_device{}();
    return s;
}

ContentPart ContentPart::from_text(std::string text) {
    return {.kind = Kind::kText, .text = std::move(text)};
}
ContentPart ContentPart::image_file(std::string path) {
    return {.kind = Kind::kImageFile, .path = std::move(path)};
}
ContentPart ContentPart::image_bytes(std::vector<std::uint8_t> bytes, std::string name) {
    return {.kind = Kind::kImageBytes, .path = std::move(name), .data = std::move(bytes)};
}
ContentPart ContentPart::image_url(std::string url, std::string name) {
    return {.kind = Kind::kImageUrl, .path = std::move(name), .url = std::move(url)};
}
ContentPart ContentPart::video_file(std::string path) {
    return {.kind = Kind::kVideoFile, .path = std::move(path)};
}
ContentPart ContentPart::video_bytes(std::vector<std::uint8_t> bytes, std::string name) {
    return {.kind = Kind::kVideoBytes, .path = std::move(name), .data = std::move(bytes)};
}
ContentPart ContentPart::video_url(std::string url, std::string name) {
    return {.kind = Kind::kVideoUrl, .path = std::move(name), .url = std::move(url)};
}
ContentPart ContentPart::image_rgb(int width, int height, std::vector<std::uint8_t> rgb,
                                   std::string name) {
    return {.kind = Kind::kImageRgb,
            .path = std::move(name),
            .data = std::move(rgb),
            .width = width,
            .height = height};
}

Prompt::Prompt() : impl_(std::make_unique<Impl>()) {}
Prompt::Prompt(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
// A moved-from prompt copies as an empty one.
Prompt::Prompt(const Prompt& other)
    : impl_(other.impl_ ? std::make_unique<Impl>(*other.impl_) : std::make_unique<Impl>()) {}
Prompt& Prompt::operator=(const Prompt& other) {
    if (this != &other) *this = Prompt(other);
    return *this;
}
Prompt::Prompt(Prompt&&) noexcept = default;
Prompt& Prompt::operator=(Prompt&&) noexcept = default;
Prompt::~Prompt() = default;
const std::vector<std::int32_t>& Prompt::token_ids() const { return impl_->prepared.ids; }
const std::vector<ImageInfo>& Prompt::images() const { return impl_->infos; }
double Prompt::image_decode_ms() const { return impl_->prepared.image_decode_ms; }
double Prompt::preprocess_ms() const { return impl_->prepared.preprocess_ms; }
std::span<const float> Prompt::pixel_values(int image, int* rows, int* cols) const {
    *rows = *cols = 0;
    const runtime::PreparedPrompt& p = impl_->prepared;
    if (image < 0 || std::size_t(image) >= p.infos.size()) return {};
    // infos[i] stands for one prepared image, or for a video's frame pairs in a row.
    std::size_t first = 0;
    for (int i = 0; i < image; ++i) first += api::prepared_images_of(p.infos[std::size_t(i)]);
    const std::size_t count = api::prepared_images_of(p.infos[std::size_t(image)]);
    if (count == 0 || first + count > p.images.size()) return {};
    const image::PreprocessedImage& im = p.images[first];
    if (im.pixel_values.empty()) return {};
    *rows = im.grid_t * im.grid_h * im.grid_w * int(count);
    *cols = int(im.pixel_values.size()) / std::max(im.grid_t * im.grid_h * im.grid_w, 1);
    if (count == 1) return im.pixel_values;
    // A video: its frame pairs' rows one after the other (pixel_values_videos), joined once.
    std::vector<float>& joined = impl_->joined_pixels;
    joined.clear();
    for (std::size_t k = first; k < first + count; ++k)
        joined.insert(joined.end(), p.images[k].pixel_values.begin(),
                      p.images[k].pixel_values.end());
    return joined;
}

}  // namespace qvl
