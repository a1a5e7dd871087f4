#include "runtime/generate.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/timer.h"

namespace qvl::runtime {

using base::ErrorCode;

base::Result<PreparedPrompt> prepare_chat_prompt(const model::Model& model,
                                                 std::span<const text::ChatMessage> messages,
                                                 const image::PreprocessConfig& preprocess,
                                                 const io::ImageLimits& limits) {
    return prepare_chat_prompt_with(
        model, messages, preprocess, [&limits](int, const text::ChatPart& part) {
            // An image given as bytes (stdin, an upload) is decoded
            // from memory; image_path then only names it.
            if (!part.image_bytes.empty()) {
                return io::decode_image(std::as_bytes(std::span(part.image_bytes)), limits,
                                        part.image_path);
            }
            return io::load_image(part.image_path, limits);
        });
}

namespace {

// The part's sampling: its fps or max_frames replace the config's (an fps also replaces a
// config's fixed num_frames, as the processor takes one or the other).
base::Result<image::VideoPreprocessConfig> part_video_config(const image::VideoPreprocessConfig& c,
                                                             const text::ChatPart& part) {
    image::VideoPreprocessConfig config = c;
    if (part.video_fps != 0) {
        if (!(part.video_fps > 0 && part.video_fps <= 1000)) {
            return base::error(ErrorCode::kInvalidArgument, "{}: video fps {} is outside (0, 1000]",
                               part.image_path, part.video_fps);
        }
        config.fps = part.video_fps;
        config.num_frames.reset();
    }
    if (part.video_max_frames != 0) {
        if (part.video_max_frames < 1) {
            return base::error(ErrorCode::kInvalidArgument, "{}: video max frames {} is below 1",
                               part.image_path, part.video_max_frames);
        }
        config.max_frames = part.video_max_frames;
        config.min_frames = std::min(config.min_frames, config.max_frames);
    }
    return config;
}

// Decodes and preprocesses one video part; its frame pairs go to out->images.
base::Result<image::PreprocessedVideo> prepare_video(const VideoRoad& road, int index,
                                                     const text::ChatPart& part,
                                                     PreparedPrompt* out) {
    QVL_ASSIGN_OR_RETURN(image::VideoPreprocessConfig config, part_video_config(road.config, part));
    base::Timer t;
    QVL_ASSIGN_OR_RETURN(io::Video video,
                         road.load(index, part, [&config](const io::VideoInfo& info) {
                             return image::sample_frame_indices(info, config);
                         }));
    out->image_decode_ms += t.elapsed_ms();
    t.reset();
    base::Result<image::PreprocessedVideo> pre = image::preprocess_video(video, config);
    if (pre.ok() && road.max_frame_tokens > 0 && pre->tokens_per_frame() > road.max_frame_tokens) {
        // Over what one vision pass of the session holds: the clip's budget lowered so that
        // each frame fits it (the reference's size whenever it fits).
        config.base.max_pixels = std::int64_t(road.max_frame_tokens) *
                                 image::pixels_per_visual_token(config.base) *
                                 std::int64_t(video.frames.size());
        config.base.min_pixels = std::min(config.base.min_pixels, config.base.max_pixels);
        pre = image::preprocess_video(video, config);
    }
    if (!pre.ok()) return pre.status().with_context(part.image_path + ": ");
    out->preprocess_ms += t.elapsed_ms();
    image::PreprocessedVideo& v = pre.value();
    out->infos.push_back({.path = part.image_path,
                          .width = video.info.width,
                          .height = video.info.height,
                          .resized_width = v.resized_width,
                          .resized_height = v.resized_height,
                          .tokens = v.num_video_tokens(),
                          .video = true,
                          .frames = int(video.frames.size()),
                          .frame_pairs = v.grid_t,
                          .fps = video.info.fps,
                          .duration_s = video.info.duration_s,
                          .sample_fps = config.fps,
                          .max_frames = int(config.max_frames)});
    for (image::PreprocessedImage& f : image::video_frames_as_images(v))
        out->images.push_back(std::move(f));
    v.pixel_values = {};  // the frames hold their rows; the prompt text needs the grid only
    return std::move(v);
}

}  // namespace

base::Result<PreparedPrompt> prepare_chat_prompt_with(
    const model::Model& model, std::span<const text::ChatMessage> messages,
    const image::PreprocessConfig& preprocess, const ImageLoader& load,
    std::span<const text::ChatTool> tools, bool add_generation_prompt, const VideoRoad* video) {
    PreparedPrompt out;
    std::vector<int> tokens_per_image;
    std::vector<image::PreprocessedVideo> videos;
    for (const text::ChatMessage& m : messages) {
        for (const text::ChatPart& part : m.parts) {
            if (part.kind == text::ChatPart::Kind::kVideo) {
                if (video == nullptr || !video->load) {
                    return base::error(ErrorCode::kUnsupported, "{}: videos are not accepted here",
                                       part.image_path);
                }
                QVL_ASSIGN_OR_RETURN(image::PreprocessedVideo v,
                                     prepare_video(*video, int(videos.size()), part, &out));
                videos.push_back(std::move(v));
                continue;
            }
            if (part.kind != text::ChatPart::Kind::kImage) continue;
            base::Timer t;
            QVL_ASSIGN_OR_RETURN(io::Image img, load(int(tokens_per_image.size()), part));
            out.image_decode_ms += t.elapsed_ms();
            t.reset();
            base::Result<image::PreprocessedImage> pre = image::preprocess_image(img, preprocess);
            if (!pre.ok()) return pre.status().with_context(part.image_path + ": ");
            out.preprocess_ms += t.elapsed_ms();
            const image::PreprocessedImage& p = pre.value();
            const int tokens = p.num_image_tokens();
            out.infos.push_back({.path = part.image_path,
                                 .width = img.width,
                                 .height = img.height,
                                 .resized_width = p.resized_width,
                                 .resized_height = p.resized_height,
                                 .tokens = tokens});
            tokens_per_image.push_back(tokens);
            out.images.push_back(std::move(pre).value());
        }
    }
    std::string text = text::render_chat(messages, add_generation_prompt, tools);
    if (!videos.empty()) {
        QVL_ASSIGN_OR_RETURN(text, image::expand_video_wrappers(text, videos));
    }
    const text::Tokenizer& tok = model.tokenizer();
    QVL_ASSIGN_OR_RETURN(std::vector<std::int32_t> ids, tok.encode(text));
    QVL_ASSIGN_OR_RETURN(
        out.ids, text::expand_image_pads(ids, model.config().image_token_id, tokens_per_image));
    return out;
}

base::Result<PreparedPrompt> prepare_raw_prompt(const model::Model& model, std::string_view text) {
    PreparedPrompt out;
    // An <|image_pad|> written in raw text tokenizes (for --tokenize) but cannot be prefilled:
    // raw prompts carry no images, and prefill says so.
    QVL_ASSIGN_OR_RETURN(out.ids, model.tokenizer().encode(text));
    return out;
}

std::vector<std::int32_t> default_stop_ids(const model::Model& model) {
    std::vector<std::int32_t> ids = model.generation().eos_token_ids;
    for (const char* name : {"<|im_end|>", "<|endoftext|>"}) {
        const std::int32_t id = model.tokenizer().token_id(name);
        if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    return ids;
}

}  // namespace qvl::runtime
