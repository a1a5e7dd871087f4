#include "runtime/session.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "base/check.h"
#include "base/checked_math.h"
#include "base/cpu_budget.h"
#include "base/log.h"
#include "graph/builder.h"
#include "graph/trace.h"
#include "kernels/task_work.h"
#include "model/mrope.h"
#include "model/rope_tables.h"
#include "model/text_decoder.h"
#include "model/vision_encoder.h"
#include "runtime/memory_budget.h"
#include "runtime/session_guarded.h"

namespace qvl::runtime {

using base::ErrorCode;
using session_detail::guarded;

Session::Session(const model::Model& model, const SessionOptions& options)
    : model_(&model),
      options_(options),
      kernels_(&session_kernels(options)),
      gemm_precision_(session_gemm_precision(options)),
      // kAuto: bf16 attention where bf16 dot products are the fast path (issue 14's evidence:
      // its logits error stays below Hugging Face's own bf16 run on every golden case).
      attention_precision_(options.precision == Precision::kBF16All ||
                                   (options.precision == Precision::kAuto &&
                                    kernels_->bf16_products && kernels::bf16_dot_for_gemm())
                               ? kernels::GemmPrecision::kBF16
                               : kernels::GemmPrecision::kF32),
      pool_(std::make_unique<base::ThreadPool>(
          options.threads > 0 ? options.threads : base::default_threads(), options.pin_threads)),
      executor_(pool_.get(), *kernels_) {
    if (options.isa && kernels_->isa != *options.isa) {
        base::log(base::LogLevel::kWarning, "kernel tier {} is not supported here; using {}",
                  kernels::isa_name(*options.isa), kernels::isa_name(kernels_->isa));
    }
    executor_.enable_profile(options.profile);
    if (!options.trace_dir.empty()) set_observer(graph::make_trace_observer(options.trace_dir));
}

base::Result<std::unique_ptr<Session>> Session::create(const model::Model& model,
                                                       const SessionOptions& options) {
    if (options.ctx_size < 1) {
        return base::error(ErrorCode::kInvalidArgument, "context size {} must be positive",
                           options.ctx_size);
    }
    if (options.slots < 1 || options.slots > model::kMaxDecodeBatch) {
        return base::error(ErrorCode::kInvalidArgument, "{} slots: a session serves 1 to {}",
                           options.slots, model::kMaxDecodeBatch);
    }
    std::unique_ptr<Session> s(new Session(model, options));
    const base::Status st = guarded("creating the session", [&] { return s->reserve(); });
    if (!st.ok()) return st;
    return s;
}

void Session::populate_arena(bool vision, std::size_t need) {
    const bool own = vision && !vision_arena_.empty();
    base::AlignedBuffer& arena = own ? vision_arena_ : arena_;
    std::size_t& done = own ? vision_arena_populated_ : arena_populated_;
    if (need <= done) return;
    // One share per thread (first touches are slow here; see KvCache::populate).
    const std::size_t from = done, bytes = need - done;
    const int parts = pool_->size();
    kernels::trace_even_split("populate", double(bytes));
    pool_->parallel_for(parts, [&](int part) {
        const std::size_t a = from + bytes * std::size_t(part) / std::size_t(parts);
        const std::size_t b = from + bytes * std::size_t(part + 1) / std::size_t(parts);
        arena.populate(a, b - a);
    });
    done = need;
}

void Session::run_graph() {
    const std::size_t need = planner_.plan(graph_);
    QVL_CHECK(need <= arena_.size(), "graph larger than the reserved arena");
    populate_arena(false, need);
    executor_.run(graph_, arena_.data());
}

void Session::reset() {
    for (int i = 0; i < kv_.slots(); ++i) reset_slot(i);
    clear_images();
}

base::Status Session::prefill(std::span<const std::int32_t> ids) { return prefill(0, ids); }

base::Status Session::prefill(int slot, std::span<const std::int32_t> ids) {
    QVL_TRY(begin_prefill(slot, ids));
    for (bool done = false; !done;) QVL_TRY(prefill_next(&done));
    return base::Status();
}

base::Status Session::begin_prefill(int slot, std::span<const std::int32_t> ids) {
    QVL_TRY(refuse_while_encoding("cannot prefill"));
    return guarded("prefill", [&]() -> base::Status {
        const model::ModelConfig& cfg = model_->config();
        const int n = int(ids.size());
        job_ = PrefillJob{};
        if (slot < 0 || slot >= kv_.slots()) {
            return base::error(ErrorCode::kInvalidArgument, "no slot {}", slot);
        }
        if (n == 0) return base::error(ErrorCode::kInvalidArgument, "empty prompt");
        QVL_TRY(check_context_fits(kv_.size(slot), n, kv_.capacity(), "the prompt"));
        for (std::int32_t id : ids) {
            if (id < 0 || id >= cfg.text.vocab_size) {
                return base::error(ErrorCode::kInvalidArgument,
                                   "token id {} is outside the vocabulary of {}", id,
                                   cfg.text.vocab_size);
            }
        }
        std::vector<model::ImageGrid> grids, frames;
        for (const EncodedImage& e : images_) (e.video_frame ? frames : grids).push_back(e.grid);
        QVL_ASSIGN_OR_RETURN(job_.pos, model::compute_rope_positions(ids, grids, cfg.image_token_id,
                                                                     frames, cfg.video_token_id));
        job_.video_pads = !frames.empty();
        job_.slot = slot;
        job_.ids = ids;
        job_.base_pos = kv_.next_rope_position(slot);
        return base::Status();
    });
}

base::Status Session::begin_prefill_reusing(int slot, std::span<const std::int32_t> ids, int keep,
                                            std::span<const model::ImageGrid> kept_grids,
                                            std::span<const model::ImageGrid> kept_frames) {
    QVL_TRY(refuse_while_encoding("cannot prefill"));
    if (slot < 0 || slot >= kv_.slots()) {
        return base::error(ErrorCode::kInvalidArgument, "no slot {}", slot);
    }
    const std::vector<std::int32_t>& held = history_[std::size_t(slot)];
    const std::int32_t pad = model_->config().image_token_id;
    const std::int32_t video_pad = model_->config().video_token_id;
    if (keep <= 0 || keep >= int(ids.size()) || keep > int(held.size()) ||
        !std::equal(ids.begin(), ids.begin() + keep, held.begin()) ||
        (ids[keep] == pad && ids[keep - 1] == pad) ||
        (ids[keep] == video_pad && ids[keep - 1] == video_pad)) {
        return base::error(ErrorCode::kInvalidArgument,
                           "cannot reuse {} tokens of slot {} for a prompt of {} tokens", keep,
                           slot, ids.size());
    }
    return guarded("prefill", [&]() -> base::Status {
        job_ = PrefillJob{};
        const model::ModelConfig& cfg = model_->config();
        for (std::int32_t id : ids.subspan(std::size_t(keep))) {
            if (id < 0 || id >= cfg.text.vocab_size) {
                return base::error(ErrorCode::kInvalidArgument,
                                   "token id {} is outside the vocabulary of {}", id,
                                   cfg.text.vocab_size);
            }
        }
        if (ids.size() > std::size_t(kv_.capacity())) {
            return base::error(ErrorCode::kOutOfRange,
                               "prompt of {} tokens does not fit the context of {} tokens",
                               ids.size(), kv_.capacity());
        }
        std::vector<model::ImageGrid> grids(kept_grids.begin(), kept_grids.end());
        std::vector<model::ImageGrid> frames(kept_frames.begin(), kept_frames.end());
        for (const EncodedImage& e : images_) (e.video_frame ? frames : grids).push_back(e.grid);
        QVL_ASSIGN_OR_RETURN(job_.pos, model::compute_rope_positions(ids, grids, cfg.image_token_id,
                                                                     frames, cfg.video_token_id));
        job_.video_pads = !frames.empty();
        kv_.truncate(keep, slot);
        kv_.set_rope_delta(0, slot);
        history_[std::size_t(slot)].resize(std::size_t(keep));
        job_.slot = slot;
        job_.ids = ids;
        job_.offset = keep;
        job_.base_pos = 0;
        return base::Status();
    });
}

base::Status Session::prefill_next(bool* done, int max_tokens) {
    *done = false;
    if (job_.slot < 0) {
        return base::error(ErrorCode::kInvalidArgument, "no prefill in progress");
    }
    if (max_tokens < 1) {
        return base::error(ErrorCode::kInvalidArgument, "prefill chunk of {} tokens", max_tokens);
    }
    QVL_TRY(refuse_while_encoding("cannot prefill"));
    return guarded("prefill", [&]() -> base::Status {
        const int n = int(job_.ids.size());
        const int offset = job_.offset;
        const int len = std::min({chunk_, max_tokens, n - offset});
        for (int i = 0; i < len; ++i) {
            chunk_pos_t_[i] = std::int32_t(job_.pos.t[offset + i] + job_.base_pos);
            chunk_pos_h_[i] = std::int32_t(job_.pos.h[offset + i] + job_.base_pos);
            chunk_pos_w_[i] = std::int32_t(job_.pos.w[offset + i] + job_.base_pos);
        }
        base::Status st = run_prefill_chunk(job_.slot, job_.ids, offset, len, job_.visual_seen);
        if (!st.ok()) {
            job_.slot = -1;
            return st;
        }
        for (int i = 0; i < len; ++i) job_.visual_seen += is_visual(job_.ids[offset + i]);
        job_.offset += len;
        if (job_.offset == n) {
            kv_.set_rope_delta(kv_.rope_delta(job_.slot) + job_.pos.rope_delta, job_.slot);
            images_.clear();
            visual_rows_used_ = 0;
            job_.slot = -1;
            *done = true;
        }
        return base::Status();
    });
}

base::Status Session::run_prefill_chunk(int slot, std::span<const std::int32_t> ids, int offset,
                                        int n, int visual_base) {
    const model::ModelConfig& cfg = model_->config();
    const model::TextConfig& tc = cfg.text;
    model::text_mrope_tables(chunk_pos_t_.data(), chunk_pos_h_.data(), chunk_pos_w_.data(), n,
                             tc.head_dim, tc.rope_theta, tc.mrope_section, text_cos_.data(),
                             text_sin_.data());
    int n_visual = 0;
    for (int i = 0; i < n; ++i) {
        if (is_visual(ids[offset + i])) visual_rows_[n_visual++] = i;
    }
    chunk_deepstack_.clear();
    for (float* p : deepstack_ptrs_) {
        chunk_deepstack_.push_back(p + std::size_t(visual_base) * tc.hidden_size);
    }
    const bool last = offset + n == int(ids.size());
    graph_.clear();
    graph::GraphBuilder g(&graph_, gemm_precision_, attention_precision_);
    const graph::Tensor logits = model::build_text_graph(
        g, tc, model_->weights().text(), kv_.view(slot),
        {.n_tokens = n,
         .pos0 = kv_.size(slot),
         .ids = ids.data() + offset,
         .rope_cos = text_cos_.data(),
         .rope_sin = text_sin_.data(),
         .n_visual = n_visual,
         .visual_rows = visual_rows_.data(),
         .image_embeds = visual_.as<float>() + std::size_t(visual_base) * tc.hidden_size,
         .deepstack = chunk_deepstack_,
         .want_logits = last,
         .lm_head = screen_ == nullptr});
    const int parts = pool_->size();
    kernels::trace_even_split("kv_populate", double(n));  // in rows: the split is even
    pool_->parallel_for(parts,
                        [&](int part) { kv_.populate(slot, kv_.size(slot), n, part, parts); });
    run_graph();
    kv_.advance(n, slot);
    history_[std::size_t(slot)].insert(history_[std::size_t(slot)].end(), ids.begin() + offset,
                                       ids.begin() + offset + n);
    if (last && screen_ != nullptr) {
        screen_rows({&slot, 1}, executor_.data(graph_, logits, arena_.data()));
    } else if (last) {
        const std::size_t vocab = std::size_t(tc.vocab_size);
        std::memcpy(logits_.data() + std::size_t(slot) * vocab,
                    executor_.data(graph_, logits, arena_.data()), vocab * sizeof(float));
        logits_ready_[std::size_t(slot)] = 1;
    }
    return base::Status();
}

base::Status Session::decode(std::int32_t token) {
    const int slot = 0;
    return decode_batch({&slot, 1}, {&token, 1});
}

base::Status Session::decode_batch(std::span<const int> slots,
                                   std::span<const std::int32_t> tokens) {
    const model::TextConfig& tc = model_->config().text;
    const int m = int(slots.size());
    QVL_TRY(refuse_while_encoding("cannot decode"));
    if (m == 0 || m > kv_.slots() || tokens.size() != slots.size()) {
        return base::error(ErrorCode::kInvalidArgument,
                           "decode batch of {} slots and {} tokens (the session has {} slots)", m,
                           tokens.size(), kv_.slots());
    }
    for (int i = 0; i < m; ++i) {
        const int slot = slots[i];
        if (slot < 0 || slot >= kv_.slots() ||
            std::find(slots.begin(), slots.begin() + i, slot) != slots.begin() + i) {
            return base::error(ErrorCode::kInvalidArgument, "decode batch: bad or repeated slot {}",
                               slot);
        }
        QVL_TRY(check_context_fits(kv_.size(slot), 1, kv_.capacity(), "the next token"));
        if (tokens[i] < 0 || tokens[i] >= tc.vocab_size) {
            return base::error(ErrorCode::kInvalidArgument, "token id {} is outside the vocabulary",
                               tokens[i]);
        }
        decode_ids_[i] = tokens[i];
        decode_pos_[i] = kv_.size(slot);
        decode_kv_[i] = kv_.view(slot);
        const std::int32_t p = std::int32_t(kv_.next_rope_position(slot));
        chunk_pos_t_[i] = chunk_pos_h_[i] = chunk_pos_w_[i] = p;
    }
    model::text_mrope_tables(chunk_pos_t_.data(), chunk_pos_h_.data(), chunk_pos_w_.data(), m,
                             tc.head_dim, tc.rope_theta, tc.mrope_section, text_cos_.data(),
                             text_sin_.data());
    graph_.clear();
    graph::GraphBuilder g(&graph_, gemm_precision_, attention_precision_);
    const graph::Tensor logits =
        model::build_text_graph(g, tc, model_->weights().text(), kv_.view(),
                                {.n_tokens = m,
                                 .ids = decode_ids_.data(),
                                 .rope_cos = text_cos_.data(),
                                 .rope_sin = text_sin_.data(),
                                 .lm_head = screen_ == nullptr,
                                 .batch_kv = {decode_kv_.data(), std::size_t(m)},
                                 .batch_pos0 = decode_pos_.data()});
    run_graph();
    const std::size_t vocab = std::size_t(tc.vocab_size);
    const float* out = executor_.data(graph_, logits, arena_.data());
    for (int i = 0; i < m; ++i) {
        kv_.advance(1, slots[i]);
        history_[std::size_t(slots[i])].push_back(tokens[i]);
        if (screen_ != nullptr) continue;
        std::memcpy(logits_.data() + std::size_t(slots[i]) * vocab, out + std::size_t(i) * vocab,
                    vocab * sizeof(float));
        logits_ready_[std::size_t(slots[i])] = 1;
    }
    if (screen_ != nullptr) screen_rows(slots, out);
    return base::Status();
}

void Session::screen_rows(std::span<const int> slots, const float* hidden) {
    const model::TextConfig& tc = model_->config().text;
    const std::size_t h = std::size_t(tc.hidden_size), vocab = std::size_t(tc.vocab_size);
    ScreenBuffers& b = screen_buf_;
    const int m = int(slots.size());
    // Rows of x (and of batch): the screened slots' first, in order, then the others'.
    int screened = 0;
    for (int i = 0; i < m; ++i) screened += full_logits_[std::size_t(slots[i])] == 0;
    for (int i = 0, next_screened = 0, next_full = screened; i < m; ++i) {
        const std::size_t slot = std::size_t(slots[i]);
        const float* row = hidden + std::size_t(i) * h;
        std::copy_n(row, h, b.hidden.data() + slot * h);
        if (full_logits_[slot] != 0) {
            std::copy_n(row, h, b.x.data() + std::size_t(next_full++) * h);
        } else {
            b.bounds[slot] = screen_->prepare_row(row, gemm_precision_,
                                                  b.x.data() + std::size_t(next_screened++) * h,
                                                  b.scratch.data());
        }
    }
    if (screened < m) {
        exact_logits(b.x.data() + std::size_t(screened) * h, m - screened,
                     b.batch.data() + std::size_t(screened) * vocab);
    }
    if (screened > 0) {
        lm_head_gemm_.run(*kernels_,
                          {.m = screened,
                           .n = int(vocab),
                           .k = int(h),
                           .a = b.x.data(),
                           .lda = std::ptrdiff_t(h),
                           .w = &screen_->matrix(),
                           .ldw = std::ptrdiff_t(h),
                           .w_type = kernels::WeightType::kQ8,
                           .c = b.batch.data(),
                           .ldc = std::ptrdiff_t(vocab)},
                          *pool_);
    }
    last_screened_rows_ = screened;
    for (int i = 0, next_screened = 0, next_full = screened; i < m; ++i) {
        const std::size_t slot = std::size_t(slots[i]);
        const bool full = full_logits_[slot] != 0;
        const float* row =
            b.batch.data() + std::size_t(full ? next_full++ : next_screened++) * vocab;
        std::copy_n(row, vocab, (full ? logits_.data() : b.scores.data()) + slot * vocab);
        logits_ready_[slot] = full ? 1 : 0;
    }
}

void Session::exact_logits(const float* x, int m, float* out) const {
    // The product the graph's "logits" node runs without the screen: lm_head as stored
    // (row-major bf16; kernels/x86/gemm_panel_stream.h reads it as fast as panels).
    const model::Matrix& w = model_->weights().text().lm_head;
    lm_head_gemm_.run(*kernels_,
                      {.m = m,
                       .n = w.rows,
                       .k = w.cols,
                       .a = x,
                       .lda = std::ptrdiff_t(w.cols),
                       .w = w.data,
                       .ldw = w.ld,
                       .w_type = w.type,
                       .c = out,
                       .ldc = std::ptrdiff_t(w.rows),
                       .precision = gemm_precision_},
                      *pool_);
}

std::span<const float> Session::logits(int slot) const {
    const model::TextConfig& tc = model_->config().text;
    const std::size_t vocab = std::size_t(tc.vocab_size), h = std::size_t(tc.hidden_size);
    float* out = logits_.data() + std::size_t(slot) * vocab;
    if (logits_ready_[std::size_t(slot)] == 0) {
        exact_logits(screen_buf_.hidden.data() + std::size_t(slot) * h, 1, out);
        logits_ready_[std::size_t(slot)] = 1;
    }
    return {out, vocab};
}

std::int32_t Session::sample(int slot, Sampler& sampler) {
    last_candidates_ = -1;
    if (screen_ == nullptr || logits_ready_[std::size_t(slot)] != 0) {
        return sampler.sample(logits(slot));
    }
    const model::TextConfig& tc = model_->config().text;
    const std::size_t vocab = std::size_t(tc.vocab_size), h = std::size_t(tc.hidden_size);
    ScreenBuffers& b = screen_buf_;
    screen_->bounds(b.bounds[std::size_t(slot)], b.scores.data() + std::size_t(slot) * vocab,
                    b.lower.data(), b.upper.data());
    const int n = sampler.screen_candidates(b.lower, b.upper, b.ids);
    if (n <= 0) return sampler.sample(logits(slot));
    // The candidates' rows, gathered: each output of the product depends only on its own row
    // and the activation row (kernels/gemm.h), so these are the full product's bits.
    const model::Matrix& w = model_->weights().text().lm_head;
    const auto* src = static_cast<const std::uint16_t*>(w.data);
    for (int i = 0; i < n; ++i) {
        std::copy_n(src + std::ptrdiff_t(b.ids[std::size_t(i)]) * w.ld, h,
                    b.rows.data() + std::size_t(i) * h);
    }
    lm_head_gemm_.run(*kernels_,
                      {.m = 1,
                       .n = n,
                       .k = int(h),
                       .a = b.hidden.data() + std::size_t(slot) * h,
                       .lda = std::ptrdiff_t(h),
                       .w = b.rows.data(),
                       .ldw = std::ptrdiff_t(h),
                       .w_type = w.type,
                       .c = b.values.data(),
                       .ldc = std::ptrdiff_t(n),
                       .precision = gemm_precision_},
                      *pool_);
    last_candidates_ = n;
    return sampler.sample_candidates({b.ids.data(), std::size_t(n)},
                                     {b.values.data(), std::size_t(n)});
}

}  // namespace qvl::runtime
