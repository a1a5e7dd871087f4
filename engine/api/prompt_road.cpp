// The one road from chat messages to a prompt (Session::prepare, Engine::prepare, and through
// them qvl-run and qvl-serve): runtime::prepare_chat_prompt_with, with every image part loaded
// by api::load_image_part (files, bytes, pixels, URLs through the media resolver) and every
// video part by api::load_video_part.

#include "api/convert.h"
#include "api/internals.h"
#include "base/cpu_budget.h"
#include "runtime/logprobs.h"

namespace qvl::api {
namespace {

static_assert(kMaxLogprobs == runtime::kMaxTopLogprobs);

Result<Prompt> wrap_prompt(base::Result<runtime::PreparedPrompt> prepared) {
    if (!prepared.ok()) return from_engine(prepared.status());
    auto impl = std::make_unique<Prompt::Impl>();
    impl->prepared = std::move(prepared).value();
    for (const runtime::ImageInfo& i : impl->prepared.infos) {
        impl->infos.push_back({.name = i.path,
                               .width = i.width,
                               .height = i.height,
                               .resized_width = i.resized_width,
                               .resized_height = i.resized_height,
                               .tokens = i.tokens,
                               .video = i.video,
                               .frames = i.frames,
                               .max_frames = i.max_frames,
                               .fps = i.fps,
                               .duration_s = i.duration_s,
                               .sample_fps = i.sample_fps});
    }
    return Prompt(std::move(impl));
}

}  // namespace

PromptRoad PromptRoad::make(const model::Model& model, const runtime::SessionOptions& session,
                            const EngineOptions& options) {
    PromptRoad road;
    road.model = &model;
    road.preprocess = runtime::effective_preprocess(model, session);
    // The resized image feeds the fused patch embedding; pixel_values are a debugging aid
    // (a model whose channels need the unfused embedding gets them anyway).
    road.preprocess.pixel_values = options.keep_pixel_values;
    road.limits = to_engine(options.image_limits);
    road.video = model.video_preprocess();
    road.video_limits = api::video_limits(options.image_limits, session.ctx_size);
    // Decoding a video is most of its preprocessing time; frame threads leave the frames as they
    // are (io/video.h) and use the cores the session computes on.
    road.video_limits.threads = session.threads > 0 ? session.threads : base::default_threads();
    road.resolve_media = options.resolve_media;
    return road;
}

Result<Prompt> PromptRoad::prepare(const std::vector<Message>& messages, const Tools& tools,
                                   bool add_generation_prompt) const {
    return guarded<Prompt>("preparing the prompt", [&] {
        const std::vector<text::ChatMessage> chat = to_engine(messages);
        std::span<const text::ChatTool> chat_tools;
        if (tools.impl != nullptr) chat_tools = tools.impl->tools;
        const runtime::VideoRoad video_road{
            .config = video,
            .max_frame_tokens = image::max_visual_tokens(preprocess),
            .load = [&](int index, const text::ChatPart&, const io::FrameSampler& sample) {
                const ContentPart* part = media_part(messages, index, true);
                if (part == nullptr) {
                    return base::Result<io::Video>(
                        base::error(base::ErrorCode::kInternal, "video part {} not found", index));
                }
                return load_video_part(*part, video_limits, resolve_media, sample);
            }};
        return wrap_prompt(runtime::prepare_chat_prompt_with(
            *model, chat, preprocess,
            [&](int index, const text::ChatPart&) {
                const ContentPart* part = media_part(messages, index, false);
                if (part == nullptr) {
                    return base::Result<io::Image>(
                        base::error(base::ErrorCode::kInternal, "image part {} not found", index));
                }
                return load_image_part(*part, limits, resolve_media);
            },
            chat_tools, add_generation_prompt, &video_road));
    });
}

Result<Prompt> PromptRoad::prepare_raw(std::string_view text) const {
    return guarded<Prompt>("preparing the prompt",
                           [&] { return wrap_prompt(runtime::prepare_raw_prompt(*model, text)); });
}

Generation to_generation(runtime::RequestResult&& r, const Sampling& sampling) {
    Generation g{.tokens = std::move(r.tokens),
                 .text = std::move(r.text),
                 .finish_reason = std::move(r.finish_reason),
                 .error = from_engine(r.error),
                 .sampling = sampling};
    const runtime::RequestTimings& t = r.timings;
    g.timings = {.queue_ms = t.queue,
                 .image_decode_ms = t.image_decode,
                 .vision_ms = t.vision,
                 .prefill_ms = t.prefill,
                 .decode_ms = t.decode,
                 .ttft_ms = t.ttft,
                 .total_ms = t.total,
                 .prompt_tokens = r.prompt_tokens,
                 .decoded_steps = r.decode_steps,
                 .cached_prompt_tokens = r.cached_prompt_tokens,
                 .image_cache_hits = r.image_cache_hits};
    g.logprobs.reserve(r.logprobs.size());
    for (runtime::TokenLogprobs& t : r.logprobs) {
        g.logprobs.push_back({.token = t.token, .logprob = t.logprob, .top = std::move(t.top)});
    }
    return g;
}

base::Result<runtime::SamplingParams> to_engine(const Sampling& s, int vocab) {
    if (!(s.repetition_penalty > 0.0f) || !(s.presence_penalty >= -2.0f) ||
        !(s.presence_penalty <= 2.0f)) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "repetition_penalty must be > 0 and presence_penalty in [-2, 2]");
    }
    if (!(s.frequency_penalty >= -2.0f) || !(s.frequency_penalty <= 2.0f)) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "frequency_penalty must be in [-2, 2]");
    }
    for (const auto& [id, bias] : s.logit_bias) {
        if (id < 0 || id >= vocab || !(bias >= -100.0f && bias <= 100.0f)) {
            return base::error(base::ErrorCode::kInvalidArgument,
                               "logit_bias: token {} with bias {}: ids are in [0, {}), biases in "
                               "[-100, 100]",
                               id, bias, vocab);
        }
    }
    if (s.logprobs < -1 || s.logprobs > runtime::kMaxTopLogprobs) {
        return base::error(base::ErrorCode::kInvalidArgument, "logprobs {} is outside -1..{}",
                           s.logprobs, runtime::kMaxTopLogprobs);
    }
    runtime::SamplingParams p;
    p.temperature = s.temperature;
    p.top_k = s.top_k;
    p.top_p = s.top_p;
    p.seed = s.seed;
    p.repetition_penalty = s.repetition_penalty;
    p.presence_penalty = s.presence_penalty;
    p.frequency_penalty = s.frequency_penalty;
    p.logit_bias = s.logit_bias;
    return p;
}

}  // namespace qvl::api
