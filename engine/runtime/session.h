// Session: one conversation (or, with slots > 1, several: one KV region per slot, decoded
// together in one batched pass) over a loaded Model. Owns the thread pool, the KV arena, the
// activation arena (reserved at create from the worst-case graphs: the largest allowed image
// and the longest prefill chunk) and the visual features waiting for the next prefill.
// After create, the big buffers never grow: encode_image and prefill allocate only small
// per-call bookkeeping (position ids, image grids), and a decode step allocates nothing at all
// (tests/model decode_no_alloc). Not thread-safe; one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/vocab.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/planner.h"
#include "image/image_preprocess.h"
#include "kernels/gemm.h"
#include "kernels/gemm_run.h"
#include "kernels/kernel_table.h"
#include "model/model.h"
#include "model/mrope.h"
#include "model/vision_encoder.h"
#include "model/vision_inputs.h"
#include "runtime/kv_cache.h"
#include "runtime/sampler.h"

namespace qvl::runtime {

// How the products round their operands. kF32 keeps f32 activations (bf16 weights widened
// exactly) and an f32 KV cache: within 2e-5 of the float64 reference. kF32KvBF16 is kF32 with
// the KV cache in bf16: half what decode attention reads, for a small error (the cache's
// rounding only). kBF16 rounds the matrix products' activations to bf16 and uses vdpbf16ps:
// about twice as fast on CPUs with AVX512_BF16, within ~1e-2 of the reference (the precision
// Hugging Face itself runs a bf16 checkpoint in); attention stays f32, the KV cache is bf16.
// kBF16All also runs attention (vision tower, prefill) on bf16 operands: ~1.6x faster attention,
// which dominates large images, for similar logits error; greedy continuations whose top logits
// are nearly tied can then differ from kBF16's. Its logits error stays below Hugging Face's own
// bf16 run on every golden case (bench/precision_evidence.py).
// kAuto (session_gemm_precision, session_kv_type) is the fastest of these on the tier, and the
// most accurate among equally fast ones: kBF16All where the CPU has AVX512_BF16 and its dot
// product outruns its FMAs (kernels/isa.h bf16_dot_for_gemm: AMD Zen 4/5), kBF16 on the other
// AVX512_BF16 CPUs (the Intel Xeons seen here), kF32KvBF16 on tiers without bf16 products
// (AVX2, AVX-512F, scalar), whose products run as f32 FMAs whether or not the activations were
// rounded first. The values are those of qvl::Precision (include/qvl/qvl.h).
enum class Precision { kAuto, kF32, kBF16, kBF16All, kF32KvBF16 };

// Longest prefill chunk: bounds the activation arena independently of the context size.
inline constexpr int kMaxPrefillChunk = 512;

// Most lm_head rows a screened sample computes exactly (Session::sample); past it the step
// computes every logit. 4096 rows of the 2B model are 16 MB, 2.6 % of the whole matrix.
inline constexpr int kScreenCandidates = 4096;

// The precisions a user can name (kAuto is the default, not a choice), in the order messages
// list them.
inline constexpr Precision kNamedPrecisions[] = {Precision::kF32, Precision::kF32KvBF16,
                                                 Precision::kBF16, Precision::kBF16All};

// The spellings "f32", "f32-kv-bf16", "bf16", "bf16-all" (and "auto"); nullopt for anything
// else.
std::optional<Precision> precision_from_name(std::string_view name);
const char* precision_name(Precision precision);
// The named spellings as a message lists them: "f32, f32-kv-bf16, bf16, bf16-all".
std::string precision_choices();

// Everything about how a session runs is an option here: the engine reads no environment
// variables (the CLI maps QVL_* onto these fields).
struct SessionOptions {
    int threads = 0;      // 0: one per physical core
    int ctx_size = 4096;  // KV arena, in tokens
    // Per-image visual-token budget (--image-min-tokens / --image-max-tokens): 0 keeps the
    // preprocessor's; the maximum, also what the arena is sized for, defaults to
    // default_max_image_tokens. Both reach images only through effective_preprocess().
    int min_image_tokens = 0;
    int max_image_tokens = 0;
    Precision precision = Precision::kAuto;
    // Highest kernel tier to use; lowered to what the CPU supports (with a warning). Unset: the
    // best the CPU supports.
    std::optional<kernels::Isa> isa;
    bool profile = false;   // per-op timing (Session::profile)
    std::string trace_dir;  // non-empty: every node's output is written there as .npy
    bool pin_threads = false;
    int slots = 1;  // sequences with their own KV region (1..model::kMaxDecodeBatch)
};

// The matrix-product precision and the KV element type of a session with these options, kAuto
// resolved: the one rule, used by Session and by the dry run's memory estimate.
kernels::GemmPrecision session_gemm_precision(const SessionOptions& options);
kernels::KvType session_kv_type(const SessionOptions& options);
// The kernel table a session with these options runs on (its isa clamped to this CPU).
const kernels::KernelTable& session_kernels(const SessionOptions& options);

// The kernel tier a session with that request runs on this machine ("avx512bf16", ...).
const char* kernel_isa_name(std::optional<kernels::Isa> requested = std::nullopt);

// The per-image visual-token budget used when none is given: the preprocessor's maximum,
// capped at 4096 tokens (16384 patches; larger images are downscaled to fit, as llama.cpp does).
int default_max_image_tokens(const model::Model& model);

// The preprocessing settings of a session with these options: the model's, with the per-image
// token budget applied. The session sizes its arena for exactly this config's maximum, so images
// prepared with it always fit; prepare prompts with it (it needs no session, e.g. --tokenize).
image::PreprocessConfig effective_preprocess(const model::Model& model,
                                             const SessionOptions& options);

class Session {
  public:
    static base::Result<std::unique_ptr<Session>> create(const model::Model& model,
                                                         const SessionOptions& options);

    // Runs the vision tower on a preprocessed image; its features wait for the next prefill,
    // which splices them into that image's run of <|image_pad|> tokens.
    // encode_image = begin_encode_image, then encode_image_next until done.
    base::Status encode_image(const image::PreprocessedImage& image);
    // The same in bounded pieces, so a scheduler can run decode steps of other slots in
    // between: begin_encode_image checks the image and builds its vision graph (the image
    // must outlive the encode); each encode_image_next runs graph nodes in order until budget_ms
    // is spent (at least one node; a budget of infinity runs them all) and sets *done after the
    // last, when the image's features join those waiting for the next prefill. The features are
    // bit-identical whatever the pieces. The vision graph and its activations have an arena of
    // their own when the session has several slots (sized for the largest image: 544 MiB for
    // the 2B model at 4096 visual tokens), so decode steps may run between the pieces
    // (with one slot it shares the activation arena and the session refuses a decode or prefill
    // until the encode ends). clear_images() or reset() abandons an encode in progress.
    base::Status begin_encode_image(const image::PreprocessedImage& image);
    base::Status encode_image_next(double budget_ms, bool* done);
    bool encoding_image() const { return vision_job_.active; }
    // Prefills ids (image pads expanded, one run per encoded image, in order) after what the
    // cache holds. Leaves the last position's logits in logits(). kOutOfRange if it would not
    // fit the KV arena.
    base::Status prefill(std::span<const std::int32_t> ids);
    // One decode step for `token`; updates logits().
    base::Status decode(std::int32_t token);

    // The same for one slot: prefill(ids) and decode(token) are slot 0's.
    base::Status prefill(int slot, std::span<const std::int32_t> ids);
    // prefill(slot, ids) in bounded pieces, so a scheduler can run decode steps in between:
    // begin_prefill checks ids and computes their positions (ids must outlive the prefill);
    // each prefill_next runs one chunk (at most 512 tokens) and sets *done after the last,
    // when logits(slot) holds the last position's logits. Decode steps of other slots may run
    // between the pieces; encode_image and another prefill may not.
    base::Status begin_prefill(int slot, std::span<const std::int32_t> ids);
    // Prefix reuse: ids is a whole prompt whose first `keep` tokens (0 < keep < ids.size())
    // the slot's KV already holds (slot_tokens begins with them, with the same images:
    // the caller checks those); keep must not cut a run of image pads. The KV is cut back to
    // keep and only the rest is prefilled, at the positions a cold prefill of ids gives it.
    // kept_grids: the grids of the images whose pads lie in ids[0, keep), kept_frames those of
    // the video frames (temporal patches) there; the pending images (encode_image) are those of
    // the rest.
    base::Status begin_prefill_reusing(int slot, std::span<const std::int32_t> ids, int keep,
                                       std::span<const model::ImageGrid> kept_grids,
                                       std::span<const model::ImageGrid> kept_frames = {});
    // max_tokens (>= 1) caps this chunk below kMaxPrefillChunk: a scheduler sizes chunks to a
    // time budget. Results are identical for any chunking.
    base::Status prefill_next(bool* done, int max_tokens = kMaxPrefillChunk);
    // One decode step for several slots in one pass: slots[i] (distinct) decodes tokens[i]. The
    // matrix products run over all rows at once; each slot's logits are bit-identical to what
    // the same step gives it alone.
    base::Status decode_batch(std::span<const int> slots, std::span<const std::int32_t> tokens);

    // The last position's logits. With the model's logits screen (model/logits_screen.h) a
    // step computes them only when asked (here, the same bits as without the screen).
    std::span<const float> logits(int slot = 0) const;
    // The slot's next token from `sampler` given its last position's logits: what
    // sampler.sample(logits(slot)) returns, through the screen when the sampler allows it
    // (greedy, top-k), which computes only the rows that can win.
    std::int32_t sample(int slot, Sampler& sampler);
    // How many exact lm_head rows the last screened sample() computed (-1: it used every
    // logit). For tests and benchmarks.
    int last_screen_candidates() const { return last_candidates_; }
    // Whether the slot's next tokens need every logit: set before its prefill (and kept until
    // set again), it makes the slot's steps compute all of them in the step itself, without the
    // logits screen's int8 product, which such a sampler cannot use (sample() would compute
    // every logit anyway, after it). The other slots of a step are screened as before; the
    // logits are the same bits either way. Nothing changes without a screen. Default: false.
    void set_full_logits(int slot, bool full) { full_logits_[std::size_t(slot)] = full ? 1 : 0; }
    // set_full_logits for the sampler that will choose the slot's tokens: full logits when it
    // cannot be screened (temperature without top-k, Sampler::screenable).
    void expect_sampler(int slot, const Sampler& sampler) {
        set_full_logits(slot, !sampler.screenable(kScreenCandidates));
    }
    // Rows the int8 screen multiplied in the last step or prefill that ended with logits (0
    // when every slot of it wanted full logits, or without a screen). For tests.
    int last_screened_rows() const { return last_screened_rows_; }
    // The final merger output of encoded image i (of those waiting for prefill).
    std::span<const float> image_features(int image) const;
    // Every feature level of encoded image i (merger output, then each deepstack level), each
    // [tokens, text hidden], concatenated: what an image-feature cache keeps. Empty if no such
    // image.
    std::vector<float> image_feature_levels(int image) const;
    // Adds an image as if encode_image had run: levels as image_feature_levels returns them,
    // grid in merged tokens; video_frame: a temporal patch of a video (a run of <|video_pad|>).
    base::Status add_encoded_image(const model::ImageGrid& grid, std::span<const float> levels,
                                   bool video_frame = false);
    void reset();
    // Drops the images encoded for the next prefill and any encode in progress (an abandoned
    // admission).
    void clear_images() {
        images_.clear();
        visual_rows_used_ = 0;
        vision_job_.active = false;
    }
    // Empties one slot's KV (the pending images stay).
    void reset_slot(int slot) {
        kv_.clear(slot);
        history_[std::size_t(slot)].clear();
    }
    // Makes slot `to` (not the one being prefilled) a copy of slot `from`: its KV, its token
    // history and its last position's logits (computed in full if the screen had deferred
    // them), bit for bit, so `to` continues exactly as `from` would: several choices from one
    // prompt, prefilled once. Costs a copy of the used KV rows.
    void fork_slot(int from, int to);
    // The token ids whose keys and values the slot's KV holds, in order.
    std::span<const std::int32_t> slot_tokens(int slot) const {
        return history_[std::size_t(slot)];
    }

    int slots() const { return kv_.slots(); }
    int context_used(int slot = 0) const { return kv_.size(slot); }
    int context_size() const { return kv_.capacity(); }
    // The KV arena: its element type (session_kv_type) and size.
    kernels::KvType kv_type() const { return kv_.type(); }
    std::size_t kv_bytes() const { return kv_.bytes(); }
    int max_image_tokens() const { return max_image_tokens_; }
    int threads() const { return pool_->size(); }
    kernels::Isa isa() const { return kernels_->isa; }
    // The precision in effect (kAuto resolved).
    Precision precision() const {
        if (gemm_precision_ == kernels::GemmPrecision::kF32) {
            return kv_.type() == kernels::KvType::kF32 ? Precision::kF32 : Precision::kF32KvBF16;
        }
        return attention_precision_ == kernels::GemmPrecision::kBF16 ? Precision::kBF16All
                                                                     : Precision::kBF16;
    }
    const model::Model& model() const { return *model_; }
    // The model's vocabulary as the grammar matcher reads it (built at the first call, ~0.1 s,
    // then shared; safe from any thread).
    std::shared_ptr<const grammar::Vocab> grammar_vocab() const;
    // A matcher of `grammar` over this model's vocabulary; end_ids end the turn.
    std::unique_ptr<grammar::Matcher> grammar_matcher(
        std::shared_ptr<const grammar::Grammar> grammar, std::vector<std::int32_t> end_ids) const;
    const graph::Profile& profile() const { return executor_.profile(); }
    // Sees every node output by name (traces, tests). Empty function: off.
    void set_observer(graph::Observer observer) {
        observer_ = std::move(observer);
        executor_.set_observer(observer_);
    }
    // Sees the vision tower's node outputs instead, only while encode pieces run (decode steps
    // between them stay unobserved by it). Empty function: the set_observer one applies.
    void set_vision_observer(graph::Observer observer) { vision_observer_ = std::move(observer); }
    // Bytes of the vision tower's own activation arena (0: it shares the activation arena).
    std::size_t vision_arena_bytes() const { return vision_arena_.size(); }

  private:
    Session(const model::Model& model, const SessionOptions& options);
    mutable std::once_flag grammar_vocab_once_;
    mutable std::shared_ptr<const grammar::Vocab> grammar_vocab_;
    // Session::create's allocations (runtime/session_reserve.cpp): reserve() checks the memory
    // budget, then sizes every buffer and arena for the options' limits through the rest.
    base::Status reserve();
    void reserve_step_buffers();
    void reserve_screen();
    void reserve_history();
    base::Status reserve_visual_features();
    std::size_t worst_case_vision_bytes();
    std::size_t worst_case_text_bytes();
    base::Status reserve_arenas(std::uint64_t fixed, std::uint64_t available);
    // Prefills ids[offset, offset + n) into slot at the positions in chunk_pos_*.
    base::Status run_prefill_chunk(int slot, std::span<const std::int32_t> ids, int offset, int n,
                                   int visual_base);
    void run_graph();
    // After a text graph that stopped before lm_head (screen_ set): keeps each row's hidden
    // state for slots[i], runs the int8 screen over the rows of the slots that sample through
    // it, and computes every logit of the others (full_logits_).
    void screen_rows(std::span<const int> slots, const float* hidden);
    // out[m, vocab] = the m rows x (row stride: hidden size) times lm_head, exactly: the
    // product the graph's "logits" node runs without the screen (the same bits).
    void exact_logits(const float* x, int m, float* out) const;
    // Maps the first `need` bytes of the activation arena (vision: the vision tower's) before a
    // graph runs on them, once: what a plan uses is written anyway, and faulting it in a page at
    // a time inside the first vision block cost tens of milliseconds.
    void populate_arena(bool vision, std::size_t need);
    std::byte* vision_arena() {
        return vision_arena_.size() > 0 ? vision_arena_.data() : arena_.data();
    }
    base::Status refuse_while_encoding(const char* what) const;

    struct EncodedImage {
        int n_tokens = 0;
        int first_row = 0;         // row in the visual feature buffers
        model::ImageGrid grid;     // in merged tokens, for the rope positions
        bool video_frame = false;  // its run is of <|video_pad|> (image::PreprocessedImage)
    };

    const model::Model* model_;
    SessionOptions options_;
    const kernels::KernelTable* kernels_;
    kernels::GemmPrecision gemm_precision_;
    kernels::GemmPrecision attention_precision_;
    std::unique_ptr<base::ThreadPool> pool_;
    graph::Executor executor_;
    graph::Graph graph_;
    graph::Planner planner_;
    KvCache kv_;
    base::AlignedBuffer arena_;
    int max_image_tokens_ = 0;
    int max_patches_ = 0;
    int chunk_ = 0;

    // Scratch sized at create.
    model::VisionInputTables vision_inputs_;
    std::vector<float> text_cos_, text_sin_;
    std::vector<std::int32_t> chunk_pos_t_, chunk_pos_h_, chunk_pos_w_, visual_rows_;
    // Per slot; with the screen, logits_ of a slot are computed on demand (logits_ready_ 0
    // until then) from hidden_.
    mutable std::vector<float> logits_;
    mutable std::vector<std::uint8_t> logits_ready_;
    const model::LogitsScreen* screen_ = nullptr;
    struct ScreenBuffers {
        std::vector<float> hidden;  // [slots, hidden]: final-normed rows under the logits
        // [slots, hidden]: a step's rows, the int8 product's (x~) first, then those of the
        // slots that want full logits (hidden as is)
        std::vector<float> x;
        std::vector<float> scores;  // [slots, vocab]: int8 products, by slot
        std::vector<float> batch;   // [slots, vocab]: a step's products, by row of x
        std::vector<model::ScreenRowBound> bounds;  // per slot
        std::vector<float> scratch, lower, upper, values;
        std::vector<std::int32_t> ids;
        std::vector<std::uint16_t> rows;  // the candidates' lm_head rows, [ids.size(), hidden]
    };
    ScreenBuffers screen_buf_;
    mutable kernels::GemmRunner lm_head_gemm_;
    int last_candidates_ = -1;
    std::vector<std::uint8_t> full_logits_;  // per slot: set_full_logits
    int last_screened_rows_ = 0;
    // The normalisation table of the fused patch embedding; usable when every channel has the
    // same mean and std (true for Qwen3-VL), else images go through pixel_values.
    float pixel_lut_[256] = {};
    bool fused_patch_embed_ = false;
    struct PrefillJob {
        int slot = -1;  // -1: none in progress
        std::span<const std::int32_t> ids;
        model::RopePositions pos;
        std::int64_t base_pos = 0;
        int offset = 0, visual_seen = 0;
        // <|video_pad|> is a visual token only when video frames wait for this prompt; otherwise
        // it is text, as compute_rope_positions treats it then.
        bool video_pads = false;
    };
    bool is_visual(std::int32_t id) const {
        return id == model_->config().image_token_id ||
               (job_.video_pads && id == model_->config().video_token_id);
    }
    PrefillJob job_;
    // The image whose vision graph (vision_graph_) runs in pieces.
    struct VisionJob {
        bool active = false;
        std::size_t next_node = 0;
        int tokens = 0;
        model::ImageGrid grid;
        bool video_frame = false;
        model::VisionGraphOutputs out;
    };
    VisionJob vision_job_;
    graph::Graph vision_graph_;
    base::AlignedBuffer vision_arena_;  // empty with one slot: the vision graph uses arena_
    std::size_t arena_populated_ = 0, vision_arena_populated_ = 0;  // populate_arena's marks
    graph::Observer observer_, vision_observer_;
    std::vector<std::vector<std::int32_t>> history_;  // per slot, capacity ctx_size
    // Decode batch inputs, one row per slot, sized at create.
    std::vector<std::int32_t> decode_ids_;
    std::vector<int> decode_pos_;
    std::vector<graph::KvCacheView> decode_kv_;

    // Visual features for the next prefill: merger output and one buffer per deepstack level,
    // each [ctx_size, text hidden].
    base::AlignedBuffer visual_;
    std::vector<float*> deepstack_ptrs_;
    std::vector<float*> chunk_deepstack_;
    std::vector<EncodedImage> images_;
    int visual_rows_used_ = 0;
};

}  // namespace qvl::runtime
