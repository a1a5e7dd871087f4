#include "runtime/session.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "base/check.h"
#include "base/checked_math.h"
#include "base/cpu_features.h"
#include "graph/builder.h"
#include "graph/trace.h"
#include "model/mrope.h"
#include "model/rope_tables.h"
#include "model/text_decoder.h"
#include "model/vision_encoder.h"
#include "runtime/memory_budget.h"

namespace qvl::runtime {

using base::ErrorCode;

namespace {

// Headroom for the graph's node and tensor tables (the 2B model's largest graph has ~450 nodes).
constexpr std::size_t kGraphReserve = 4096;

// The engine neither throws nor catches, except here at the public boundary: a stray
// bad_alloc from a std container becomes a Status instead of a crash.
template <class Fn>
base::Status guarded(const char* what, Fn&& fn) {
    try {
        return fn();
    } catch (const std::exception& e) {
        return base::error(ErrorCode::kResourceExhausted, "{}: {}", what, e.what());
    }
}

}  // namespace

const char* kernel_isa_name() { return kernels::isa_name(kernels::best_isa()); }

int default_max_image_tokens(const model::Model& model) {
    const image::PreprocessConfig& pp = model.preprocess();
    const std::int64_t unit = std::int64_t(pp.patch_size) * pp.merge_size;
    const std::int64_t tokens = pp.max_pixels / (unit * unit);
    return int(std::clamp<std::int64_t>(tokens, 1, 4096));
}

Session::Session(const model::Model& model, const SessionOptions& options)
    : model_(&model),
      options_(options),
      isa_(kernels::best_isa()),
      gemm_precision_(
          options.precision == Precision::kBF16 || options.precision == Precision::kBF16All ||
                  (options.precision == Precision::kAuto && isa_ == kernels::Isa::kAvx512Bf16)
              ? kernels::GemmPrecision::kBF16
              : kernels::GemmPrecision::kF32),
      attention_precision_(options.precision == Precision::kBF16All ? kernels::GemmPrecision::kBF16
                                                                    : kernels::GemmPrecision::kF32),
      pool_(std::make_unique<base::ThreadPool>(
          options.threads > 0 ? options.threads : base::cpu_features().physical_cores,
          options.pin_threads)),
      executor_(pool_.get(), isa_) {
    executor_.enable_profile(options.profile);
    if (const char* dir = std::getenv("QVL_TRACE"); dir != nullptr && *dir != '\0') {
        executor_.set_observer(graph::make_trace_observer(dir));
    }
}

base::Result<std::unique_ptr<Session>> Session::create(const model::Model& model,
                                                       const SessionOptions& options) {
    if (options.ctx_size < 1) {
        return base::error(ErrorCode::kInvalidArgument, "context size {} must be positive",
                           options.ctx_size);
    }
    std::unique_ptr<Session> s(new Session(model, options));
    const base::Status st = guarded("creating the session", [&] { return s->reserve(); });
    if (!st.ok()) return st;
    return s;
}

base::Status Session::reserve() {
    const model::ModelConfig& cfg = model_->config();
    const model::VisionConfig& vc = cfg.vision;
    const model::TextConfig& tc = cfg.text;
    const int merge_rows = vc.spatial_merge_size * vc.spatial_merge_size;
    max_image_tokens_ = options_.max_image_tokens > 0 ? options_.max_image_tokens
                                                      : default_max_image_tokens(*model_);
    max_patches_ = max_image_tokens_ * merge_rows;
    chunk_ = std::min(kMaxPrefillChunk, options_.ctx_size);

    // What the session will hold besides the activation arena (planned below): KV arena,
    // visual features, vision scratch. Checked before anything is allocated, so a hostile
    // --ctx-size or --image-max-tokens is refused with numbers instead of paging to death.
    std::uint64_t kv_bytes = 0, visual_bytes = 0, scratch_bytes = 0, fixed = 0;
    const bool sizes_ok =
        base::checked_product(
            {2, std::uint64_t(tc.num_hidden_layers), std::uint64_t(tc.num_key_value_heads),
             std::uint64_t(tc.head_dim), std::uint64_t(options_.ctx_size), sizeof(float)},
            &kv_bytes) &&
        base::checked_product(
            {1 + vc.deepstack_visual_indexes.size(), std::uint64_t(options_.ctx_size),
             std::uint64_t(tc.hidden_size), sizeof(float)},
            &visual_bytes) &&
        base::checked_product({std::uint64_t(max_patches_),
                               std::uint64_t(vc.hidden_size + vc.head_dim() + 2), sizeof(float)},
                              &scratch_bytes) &&
        base::checked_add(kv_bytes, visual_bytes, &fixed) &&
        base::checked_add(fixed, scratch_bytes, &fixed);
    const std::uint64_t available = available_memory_bytes();
    QVL_TRY(check_memory_budget(model_->weights().mapped_bytes(),
                                sizes_ok ? fixed : ~std::uint64_t(0), 0, available));

    QVL_ASSIGN_OR_RETURN(kv_, KvCache::create(tc.num_hidden_layers, tc.num_key_value_heads,
                                              tc.head_dim, options_.ctx_size));
    vision_inputs_.reserve(vc, max_patches_);
    text_cos_.resize(std::size_t(chunk_) * tc.head_dim / 2);
    text_sin_.resize(text_cos_.size());
    chunk_pos_t_.resize(chunk_);
    chunk_pos_h_.resize(chunk_);
    chunk_pos_w_.resize(chunk_);
    visual_rows_.resize(chunk_);
    logits_.resize(tc.vocab_size);
    const image::PreprocessConfig& pp = model_->preprocess();
    fused_patch_embed_ = pp.image_mean[0] == pp.image_mean[1] &&
                         pp.image_mean[0] == pp.image_mean[2] &&
                         pp.image_std[0] == pp.image_std[1] && pp.image_std[0] == pp.image_std[2];
    float lut3[3][256];
    image::normalization_lut(pp, lut3);
    std::copy(lut3[0], lut3[0] + 256, pixel_lut_);

    // Visual features: merger output + one block per deepstack level, [ctx, hidden] each.
    const std::size_t n_levels = 1 + vc.deepstack_visual_indexes.size();
    const std::size_t level_floats = std::size_t(options_.ctx_size) * tc.hidden_size;
    QVL_ASSIGN_OR_RETURN(visual_,
                         base::AlignedBuffer::allocate(n_levels * level_floats * sizeof(float),
                                                       "visual features", false));
    for (std::size_t l = 1; l < n_levels; ++l) {
        deepstack_ptrs_.push_back(visual_.as<float>() + l * level_floats);
    }

    // Worst-case graphs: the largest image and a full prefill chunk with every row visual.
    graph_.nodes.reserve(kGraphReserve);
    graph_.tensors.reserve(kGraphReserve);
    std::size_t arena_bytes = 0;
    {
        graph_.clear();
        graph::GraphBuilder g(&graph_, gemm_precision_, attention_precision_);
        model::build_vision_graph(g, vc, model_->weights().vision(), vision_inputs_.worst_case());
        arena_bytes = std::max(arena_bytes, planner_.plan(graph_));
    }
    {
        graph_.clear();
        graph::GraphBuilder g(&graph_, gemm_precision_, attention_precision_);
        model::build_text_graph(g, tc, model_->weights().text(), kv_.view(),
                                {.n_tokens = chunk_,
                                 .pos0 = 0,
                                 .ids = chunk_pos_t_.data(),
                                 .rope_cos = text_cos_.data(),
                                 .rope_sin = text_sin_.data(),
                                 .n_visual = chunk_,
                                 .visual_rows = visual_rows_.data(),
                                 .image_embeds = visual_.as<float>(),
                                 .deepstack = deepstack_ptrs_});
        arena_bytes = std::max(arena_bytes, planner_.plan(graph_));
    }
    graph_.clear();
    // Refuse now, with the numbers, rather than be killed half-way through a prefill.
    QVL_TRY(check_memory_budget(model_->weights().mapped_bytes(), fixed, arena_bytes, available));
    QVL_ASSIGN_OR_RETURN(arena_,
                         base::AlignedBuffer::allocate(arena_bytes, "activation arena", false));
    return base::Status();
}

void Session::run_graph() {
    const std::size_t need = planner_.plan(graph_);
    QVL_CHECK(need <= arena_.size(), "graph larger than the reserved arena");
    executor_.run(graph_, arena_.data());
}

std::span<const float> Session::image_features(int image) const {
    if (image < 0 || image >= int(images_.size())) return {};
    const int hidden = model_->config().text.hidden_size;
    const EncodedImage& e = images_[image];
    return {visual_.as<float>() + std::size_t(e.first_row) * hidden,
            std::size_t(e.n_tokens) * hidden};
}

void Session::reset() {
    kv_.clear();
    images_.clear();
    visual_rows_used_ = 0;
}

base::Status Session::encode_image(const image::PreprocessedImage& image) {
    return guarded("encoding an image", [&]() -> base::Status {
        const model::VisionConfig& vc = model_->config().vision;
        const int m = vc.spatial_merge_size;
        const int n = image.grid_t * image.grid_h * image.grid_w;
        const int tokens = n / (m * m);
        if (n > max_patches_) {
            return base::error(ErrorCode::kOutOfRange,
                               "image of {} visual tokens is over this session's budget of {}",
                               tokens, max_image_tokens_);
        }
        if (visual_rows_used_ + tokens > kv_.capacity()) {
            return base::error(ErrorCode::kOutOfRange,
                               "images need {} tokens but the context holds {}",
                               visual_rows_used_ + tokens, kv_.capacity());
        }
        const model::VisionWeights& w = model_->weights().vision();
        model::VisionGraphInputs in =
            vision_inputs_.prepare(vc, w, image.grid_t, image.grid_h, image.grid_w, isa_);
        const bool fused =
            fused_patch_embed_ && image.grid_t == 1 &&
            image.resized.rgb.size() == std::size_t(image.resized_height) * image.resized_width * 3;
        if (fused) {  // patches gathered from the resized image inside the GEMM packing
            in.rgb = image.resized.rgb.data();
            in.image_height = image.resized_height;
            in.image_width = image.resized_width;
            in.lut = pixel_lut_;
        } else if (image.pixel_values.size() == std::size_t(n) * w.patch_embed.cols) {
            in.pixel_values = const_cast<float*>(image.pixel_values.data());
        } else {
            return base::error(ErrorCode::kInvalidArgument,
                               "image has neither its resized pixels nor its pixel_values");
        }
        graph_.clear();
        graph::GraphBuilder g(&graph_, gemm_precision_, attention_precision_);
        const model::VisionGraphOutputs out = model::build_vision_graph(g, vc, w, in);
        run_graph();

        const int out_hidden = model_->config().text.hidden_size;
        const std::size_t bytes = std::size_t(tokens) * out_hidden * sizeof(float);
        const std::size_t row0 = std::size_t(visual_rows_used_) * out_hidden;
        std::memcpy(visual_.as<float>() + row0,
                    executor_.data(graph_, out.image_embeds, arena_.data()), bytes);
        for (std::size_t j = 0; j < out.deepstack.size(); ++j) {
            std::memcpy(deepstack_ptrs_[j] + row0,
                        executor_.data(graph_, out.deepstack[j], arena_.data()), bytes);
        }
        images_.push_back(
            {.n_tokens = tokens,
             .first_row = visual_rows_used_,
             .grid = {.t = image.grid_t, .h = image.grid_h / m, .w = image.grid_w / m}});
        visual_rows_used_ += tokens;
        return base::Status();
    });
}

base::Status Session::prefill(std::span<const std::int32_t> ids) {
    return guarded("prefill", [&]() -> base::Status {
        const model::ModelConfig& cfg = model_->config();
        const int n = int(ids.size());
        if (n == 0) return base::error(ErrorCode::kInvalidArgument, "empty prompt");
        if (std::int64_t(kv_.size()) + n > kv_.capacity()) {
            return base::error(ErrorCode::kOutOfRange,
                               "prompt of {} tokens does not fit the context of {} tokens "
                               "({} already used)",
                               n, kv_.capacity(), kv_.size());
        }
        for (std::int32_t id : ids) {
            if (id < 0 || id >= cfg.text.vocab_size) {
                return base::error(ErrorCode::kInvalidArgument,
                                   "token id {} is outside the vocabulary of {}", id,
                                   cfg.text.vocab_size);
            }
        }
        std::vector<model::ImageGrid> grids;
        for (const EncodedImage& e : images_) grids.push_back(e.grid);
        QVL_ASSIGN_OR_RETURN(model::RopePositions pos,
                             model::compute_rope_positions(ids, grids, cfg.image_token_id));
        const std::int64_t base_pos = kv_.next_rope_position();
        int visual_seen = 0;
        for (int offset = 0; offset < n; offset += chunk_) {
            const int len = std::min(chunk_, n - offset);
            for (int i = 0; i < len; ++i) {
                chunk_pos_t_[i] = std::int32_t(pos.t[offset + i] + base_pos);
                chunk_pos_h_[i] = std::int32_t(pos.h[offset + i] + base_pos);
                chunk_pos_w_[i] = std::int32_t(pos.w[offset + i] + base_pos);
            }
            QVL_TRY(run_prefill_chunk(ids, offset, len, chunk_pos_t_.data(), chunk_pos_h_.data(),
                                      chunk_pos_w_.data(), visual_seen));
            for (int i = 0; i < len; ++i) visual_seen += ids[offset + i] == cfg.image_token_id;
        }
        kv_.set_rope_delta(kv_.rope_delta() + pos.rope_delta);
        images_.clear();
        visual_rows_used_ = 0;
        return base::Status();
    });
}

base::Status Session::run_prefill_chunk(std::span<const std::int32_t> ids, int offset, int n,
                                        const std::int32_t* pos_t, const std::int32_t* pos_h,
                                        const std::int32_t* pos_w, int visual_base) {
    const model::ModelConfig& cfg = model_->config();
    const model::TextConfig& tc = cfg.text;
    model::text_mrope_tables(pos_t, pos_h, pos_w, n, tc.head_dim, tc.rope_theta, tc.mrope_section,
                             text_cos_.data(), text_sin_.data());
    int n_visual = 0;
    for (int i = 0; i < n; ++i) {
        if (ids[offset + i] == cfg.image_token_id) visual_rows_[n_visual++] = i;
    }
    chunk_deepstack_.clear();
    for (float* p : deepstack_ptrs_) {
        chunk_deepstack_.push_back(p + std::size_t(visual_base) * tc.hidden_size);
    }
    const bool last = offset + n == int(ids.size());
    graph_.clear();
    graph::GraphBuilder g(&graph_, gemm_precision_, attention_precision_);
    const graph::Tensor logits = model::build_text_graph(
        g, tc, model_->weights().text(), kv_.view(),
        {.n_tokens = n,
         .pos0 = kv_.size(),
         .ids = ids.data() + offset,
         .rope_cos = text_cos_.data(),
         .rope_sin = text_sin_.data(),
         .n_visual = n_visual,
         .visual_rows = visual_rows_.data(),
         .image_embeds = visual_.as<float>() + std::size_t(visual_base) * tc.hidden_size,
         .deepstack = chunk_deepstack_,
         .want_logits = last});
    run_graph();
    kv_.advance(n);
    if (last) {
        std::memcpy(logits_.data(), executor_.data(graph_, logits, arena_.data()),
                    logits_.size() * sizeof(float));
    }
    return base::Status();
}

base::Status Session::decode(std::int32_t token) {
    const model::TextConfig& tc = model_->config().text;
    if (kv_.size() + 1 > kv_.capacity()) {
        return base::error(ErrorCode::kOutOfRange, "the context of {} tokens is full",
                           kv_.capacity());
    }
    if (token < 0 || token >= tc.vocab_size) {
        return base::error(ErrorCode::kInvalidArgument, "token id {} is outside the vocabulary",
                           token);
    }
    decode_id_ = token;
    const std::int32_t p = std::int32_t(kv_.next_rope_position());
    chunk_pos_t_[0] = chunk_pos_h_[0] = chunk_pos_w_[0] = p;
    model::text_mrope_tables(chunk_pos_t_.data(), chunk_pos_h_.data(), chunk_pos_w_.data(), 1,
                             tc.head_dim, tc.rope_theta, tc.mrope_section, text_cos_.data(),
                             text_sin_.data());
    graph_.clear();
    graph::GraphBuilder g(&graph_, gemm_precision_, attention_precision_);
    const graph::Tensor logits =
        model::build_text_graph(g, tc, model_->weights().text(), kv_.view(),
                                {.n_tokens = 1,
                                 .pos0 = kv_.size(),
                                 .ids = &decode_id_,
                                 .rope_cos = text_cos_.data(),
                                 .rope_sin = text_sin_.data()});
    run_graph();
    kv_.advance(1);
    std::memcpy(logits_.data(), executor_.data(graph_, logits, arena_.data()),
                logits_.size() * sizeof(float));
    return base::Status();
}

}  // namespace qvl::runtime
