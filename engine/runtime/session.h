// Session: one conversation over a loaded Model. Owns the thread pool, the KV arena, the
// activation arena (reserved at create from the worst-case graphs: the largest allowed image
// and the longest prefill chunk) and the visual features waiting for the next prefill.
// After create, encode_image / prefill / decode allocate nothing but graph scratch that was
// reserved up front; a decode step allocates nothing at all. Not thread-safe; one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/planner.h"
#include "image/image_preprocess.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "model/model.h"
#include "model/mrope.h"
#include "model/vision_inputs.h"
#include "runtime/kv_cache.h"

namespace qvl::runtime {

// How the products round their operands. kF32 keeps f32 activations (bf16 weights widened
// exactly): within 2e-5 of the float64 reference. kBF16 rounds the matrix products' activations
// to bf16 and uses vdpbf16ps: about twice as fast on CPUs with AVX512_BF16, within ~1e-2 of the
// reference (the precision Hugging Face itself runs a bf16 checkpoint in); attention stays f32.
// kBF16All also runs attention (vision tower, prefill) on bf16 operands: ~1.6x faster attention,
// which dominates large images, for similar logits error; greedy continuations whose top logits
// are nearly tied can then differ from kBF16's. kAuto picks kBF16 where the CPU has
// AVX512_BF16, else kF32.
enum class Precision { kAuto, kF32, kBF16, kBF16All };

// Longest prefill chunk: bounds the activation arena independently of the context size.
inline constexpr int kMaxPrefillChunk = 512;

struct SessionOptions {
    int threads = 0;      // 0: one per physical core
    int ctx_size = 4096;  // KV arena, in tokens
    int max_image_tokens =
        0;  // per-image budget the arena is sized for; 0: default_max_image_tokens
    Precision precision = Precision::kAuto;
    bool profile = false;  // per-op timing (Session::profile)
    bool pin_threads = false;
};

// The kernel tier sessions use on this machine ("avx512bf16", ...; QVL_ISA may lower it).
const char* kernel_isa_name();

// The per-image visual-token budget used when none is given: the preprocessor's maximum,
// capped at 4096 tokens (16384 patches; larger images are downscaled to fit, as llama.cpp does).
int default_max_image_tokens(const model::Model& model);

class Session {
  public:
    static base::Result<std::unique_ptr<Session>> create(const model::Model& model,
                                                         const SessionOptions& options);

    // Runs the vision tower on a preprocessed image; its features wait for the next prefill,
    // which splices them into that image's run of <|image_pad|> tokens.
    base::Status encode_image(const image::PreprocessedImage& image);
    // Prefills ids (image pads expanded, one run per encoded image, in order) after what the
    // cache holds. Leaves the last position's logits in logits(). kOutOfRange if it would not
    // fit the KV arena.
    base::Status prefill(std::span<const std::int32_t> ids);
    // One decode step for `token`; updates logits().
    base::Status decode(std::int32_t token);

    std::span<const float> logits() const { return {logits_.data(), logits_.size()}; }
    // The final merger output of encoded image i (of those waiting for prefill).
    std::span<const float> image_features(int image) const;
    void reset();

    int context_used() const { return kv_.size(); }
    int context_size() const { return kv_.capacity(); }
    int max_image_tokens() const { return max_image_tokens_; }
    int threads() const { return pool_->size(); }
    kernels::Isa isa() const { return isa_; }
    // The precision in effect (kAuto resolved).
    Precision precision() const {
        if (gemm_precision_ == kernels::GemmPrecision::kF32) return Precision::kF32;
        return attention_precision_ == kernels::GemmPrecision::kBF16 ? Precision::kBF16All
                                                                     : Precision::kBF16;
    }
    const model::Model& model() const { return *model_; }
    const graph::Profile& profile() const { return executor_.profile(); }
    // Sees every node output by name (traces, tests). Empty function: off.
    void set_observer(graph::Observer observer) { executor_.set_observer(std::move(observer)); }

  private:
    Session(const model::Model& model, const SessionOptions& options);
    base::Status reserve();
    base::Status run_prefill_chunk(std::span<const std::int32_t> ids, int offset, int n,
                                   const std::int32_t* pos_t, const std::int32_t* pos_h,
                                   const std::int32_t* pos_w, int visual_base);
    void run_graph();

    struct EncodedImage {
        int n_tokens = 0;
        int first_row = 0;      // row in the visual feature buffers
        model::ImageGrid grid;  // in merged tokens, for the rope positions
    };

    const model::Model* model_;
    SessionOptions options_;
    kernels::Isa isa_;
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
    std::vector<float> logits_;
    // The normalisation table of the fused patch embedding; usable when every channel has the
    // same mean and std (true for Qwen3-VL), else images go through pixel_values.
    float pixel_lut_[256] = {};
    bool fused_patch_embed_ = false;
    std::int32_t decode_id_ = 0;

    // Visual features for the next prefill: merger output and one buffer per deepstack level,
    // each [ctx_size, text hidden].
    base::AlignedBuffer visual_;
    std::vector<float*> deepstack_ptrs_;
    std::vector<float*> chunk_deepstack_;
    std::vector<EncodedImage> images_;
    int visual_rows_used_ = 0;
};

}  // namespace qvl::runtime
