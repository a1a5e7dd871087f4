// What a session allocates up front (Session::create): everything a request could need at the
// options' limits (the largest allowed image, a full prefill chunk, a decode step of every
// slot), checked against the memory budget before it is allocated, so that a hostile
// --ctx-size or --image-max-tokens is refused with numbers instead of paging to death.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/checked_math.h"
#include "graph/builder.h"
#include "model/text_decoder.h"
#include "model/vision_encoder.h"
#include "runtime/memory_budget.h"
#include "runtime/session.h"

namespace qvl::runtime {
namespace {

// Headroom for the graph's node and tensor tables (the 2B model's largest graph has ~450 nodes).
constexpr std::size_t kGraphReserve = 4096;

// What the session will hold besides the activation arenas: KV arena, visual features, vision
// scratch (max_patches patch rows). False when the sum does not fit 64 bits.
bool fixed_session_bytes(const model::ModelConfig& cfg, const SessionOptions& options,
                         int max_patches, std::uint64_t* fixed) {
    const model::VisionConfig& vc = cfg.vision;
    const model::TextConfig& tc = cfg.text;
    std::uint64_t kv_bytes = 0, visual_bytes = 0, scratch_bytes = 0;
    *fixed = 0;
    return KvCache::arena_bytes(tc.num_hidden_layers, tc.num_key_value_heads, tc.head_dim,
                                options.ctx_size, options.slots, session_kv_type(options),
                                &kv_bytes) &&
           base::checked_product(
               {1 + vc.deepstack_visual_indexes.size(), std::uint64_t(options.ctx_size),
                std::uint64_t(tc.hidden_size), sizeof(float)},
               &visual_bytes) &&
           base::checked_product({std::uint64_t(max_patches),
                                  std::uint64_t(vc.hidden_size + vc.head_dim() + 2), sizeof(float)},
                                 &scratch_bytes) &&
           base::checked_add(kv_bytes, visual_bytes, fixed) &&
           base::checked_add(*fixed, scratch_bytes, fixed);
}

}  // namespace

base::Status Session::reserve() {
    const model::ModelConfig& cfg = model_->config();
    const model::VisionConfig& vc = cfg.vision;
    const model::TextConfig& tc = cfg.text;
    const int merge_rows = vc.spatial_merge_size * vc.spatial_merge_size;
    max_image_tokens_ = image::max_visual_tokens(effective_preprocess(*model_, options_));
    max_patches_ = max_image_tokens_ * merge_rows;
    chunk_ = std::min(kMaxPrefillChunk, options_.ctx_size);

    // Checked before anything is allocated.
    std::uint64_t fixed = 0;
    const bool sizes_ok = fixed_session_bytes(cfg, options_, max_patches_, &fixed);
    const std::uint64_t available = available_memory_bytes();
    QVL_TRY(check_memory_budget(model_->weights().mapped_bytes(),
                                sizes_ok ? fixed : ~std::uint64_t(0), 0, available));

    QVL_ASSIGN_OR_RETURN(
        kv_, KvCache::create(tc.num_hidden_layers, tc.num_key_value_heads, tc.head_dim,
                             options_.ctx_size, options_.slots, session_kv_type(options_)));
    QVL_TRY(vision_inputs_.reserve(vc, max_patches_));
    reserve_step_buffers();
    reserve_screen();
    reserve_history();
    QVL_TRY(reserve_visual_features());
    return reserve_arenas(fixed, available);
}

void Session::reserve_step_buffers() {
    const model::TextConfig& tc = model_->config().text;
    const int rows = std::max(chunk_, options_.slots);
    text_cos_.resize(std::size_t(rows) * tc.head_dim / 2);
    text_sin_.resize(text_cos_.size());
    chunk_pos_t_.resize(rows);
    chunk_pos_h_.resize(rows);
    chunk_pos_w_.resize(rows);
    visual_rows_.resize(chunk_);
    logits_.resize(std::size_t(options_.slots) * tc.vocab_size);
    logits_ready_.assign(std::size_t(options_.slots), 1);
    full_logits_.assign(std::size_t(options_.slots), 0);
    decode_ids_.resize(options_.slots);
    decode_pos_.resize(options_.slots);
    decode_kv_.resize(options_.slots);
}

void Session::reserve_screen() {
    const model::TextConfig& tc = model_->config().text;
    screen_ = model_->logits_screen();
    if (screen_ == nullptr || screen_->cols() != tc.hidden_size ||
        screen_->rows() != tc.vocab_size) {
        screen_ = nullptr;
        return;
    }
    const std::size_t h = std::size_t(tc.hidden_size), v = std::size_t(tc.vocab_size),
                      n = std::size_t(options_.slots);
    ScreenBuffers& b = screen_buf_;
    b.hidden.resize(n * h);
    b.x.resize(n * h);
    b.scores.resize(n * v);
    b.batch.resize(n * v);
    b.bounds.resize(n);
    b.scratch.resize(screen_->scratch_floats());
    b.lower.resize(v);
    b.upper.resize(v);
    b.ids.resize(kScreenCandidates);
    b.values.resize(kScreenCandidates);
    b.rows.resize(kScreenCandidates * h);
}

void Session::reserve_history() {
    history_.resize(std::size_t(options_.slots));
    for (std::vector<std::int32_t>& h : history_) h.reserve(std::size_t(options_.ctx_size));
    const image::PreprocessConfig& pp = model_->preprocess();
    fused_patch_embed_ = image::fused_patch_embed_possible(pp);
    float lut3[3][256];
    image::normalization_lut(pp, lut3);
    std::copy(lut3[0], lut3[0] + 256, pixel_lut_);
}

base::Status Session::reserve_visual_features() {
    // Visual features: merger output + one block per deepstack level, [ctx, hidden] each.
    const model::ModelConfig& cfg = model_->config();
    const std::size_t n_levels = 1 + cfg.vision.deepstack_visual_indexes.size();
    const std::size_t level_floats = std::size_t(options_.ctx_size) * cfg.text.hidden_size;
    QVL_ASSIGN_OR_RETURN(visual_,
                         base::AlignedBuffer::allocate(n_levels * level_floats * sizeof(float),
                                                       "visual features", false));
    for (std::size_t l = 1; l < n_levels; ++l) {
        deepstack_ptrs_.push_back(visual_.as<float>() + l * level_floats);
    }
    return base::Status();
}

std::size_t Session::worst_case_vision_bytes() {
    const model::VisionConfig& vc = model_->config().vision;
    graph::GraphBuilder g(&vision_graph_, gemm_precision_, attention_precision_);
    model::build_vision_graph(g, vc, model_->weights().vision(), vision_inputs_.worst_case());
    const std::size_t bytes = planner_.plan(vision_graph_);
    vision_graph_.clear();
    return bytes;
}

std::size_t Session::worst_case_text_bytes() {
    const model::TextConfig& tc = model_->config().text;
    std::size_t bytes = 0;
    {  // a full prefill chunk with every row visual
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
        bytes = std::max(bytes, planner_.plan(graph_));
    }
    {  // a decode step of every slot at once
        for (int i = 0; i < options_.slots; ++i) decode_kv_[i] = kv_.view(i);
        graph_.clear();
        graph::GraphBuilder g(&graph_, gemm_precision_, attention_precision_);
        model::build_text_graph(g, tc, model_->weights().text(), kv_.view(),
                                {.n_tokens = options_.slots,
                                 .ids = decode_ids_.data(),
                                 .rope_cos = text_cos_.data(),
                                 .rope_sin = text_sin_.data(),
                                 .batch_kv = decode_kv_,
                                 .batch_pos0 = decode_pos_.data()});
        bytes = std::max(bytes, planner_.plan(graph_));
    }
    graph_.clear();
    return bytes;
}

base::Status Session::reserve_arenas(std::uint64_t fixed, std::uint64_t available) {
    // Worst-case graphs: the largest image and a full prefill chunk with every row visual.
    graph_.nodes.reserve(kGraphReserve);
    graph_.tensors.reserve(kGraphReserve);
    vision_graph_.nodes.reserve(kGraphReserve);
    vision_graph_.tensors.reserve(kGraphReserve);
    const std::size_t vision_bytes = worst_case_vision_bytes();
    const std::size_t arena_bytes = worst_case_text_bytes();
    // With several slots the vision tower has an arena of its own, so that decode steps of the
    // other slots can run between its pieces; with one, nothing decodes meanwhile: it shares.
    const bool own_vision_arena = options_.slots > 1;
    std::uint64_t all_arenas = std::max(arena_bytes, vision_bytes);
    if (own_vision_arena && !base::checked_add(arena_bytes, vision_bytes, &all_arenas)) {
        all_arenas = ~std::uint64_t(0);
    }
    // Refuse now, with the numbers, rather than be killed half-way through a prefill.
    QVL_TRY(check_memory_budget(model_->weights().mapped_bytes(), fixed, all_arenas, available));
    if (own_vision_arena) {
        QVL_ASSIGN_OR_RETURN(vision_arena_, base::AlignedBuffer::allocate(
                                                vision_bytes, "vision activation arena", false));
    }
    QVL_ASSIGN_OR_RETURN(arena_, base::AlignedBuffer::allocate(
                                     std::size_t(own_vision_arena ? arena_bytes : all_arenas),
                                     "activation arena", false));
    return base::Status();
}

}  // namespace qvl::runtime
