// ModelWeights: every tensor of a Qwen3-VL checkpoint bound by its Hugging Face name
// (weight_names.h) and shape-checked against the ModelConfig.
//
// Matrices are [rows, cols] row-major, rows = output features (nn.Linear [out, in]), ld = cols.
// BF16 and F32 matrices point straight into the read-only mmap (zero copy); F16 matrices, and any
// matrix whose data is not aligned to its element size, are copied at load (F16 widened to F32).
// Vectors (norm weights, biases) are always F32 copies, widened once at load. All copies live in
// one 64-byte aligned buffer owned by ModelWeights; every view lives as long as the ModelWeights
// (moving it keeps them valid). Tensors the model does not use are ignored; lm_head.weight is
// ignored when tie_word_embeddings is true (lm_head then equals embed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "io/safetensors.h"
#include "kernels/types.h"
#include "model/config.h"

namespace qvl::model {

struct Matrix {
    const void* data = nullptr;
    kernels::WeightType type = kernels::WeightType::kF32;
    int rows = 0;
    int cols = 0;
    std::ptrdiff_t ld = 0;  // elements between row starts
    const char* name = "";  // the Hugging Face tensor name
};

struct Vector {
    const float* data = nullptr;
    int size = 0;
};

struct VisionBlockWeights {
    Vector norm1_w, norm1_b;  // [hidden]
    Matrix qkv;               // [3 * hidden, hidden]: rows Q | K | V, head h at h * head_dim
    Vector qkv_b;             // [3 * hidden]
    Matrix proj;              // [hidden, hidden]
    Vector proj_b;            // [hidden]
    Vector norm2_w, norm2_b;  // [hidden]
    Matrix fc1;               // [intermediate, hidden]
    Vector fc1_b;             // [intermediate]
    Matrix fc2;               // [hidden, intermediate]
    Vector fc2_b;             // [hidden]
};

// merged = hidden * spatial_merge_size^2. The final merger normalises before the 2x2 shuffle
// (norm [hidden]); the deepstack mergers after it (norm [merged]).
struct MergerWeights {
    Vector norm_w, norm_b;
    Matrix fc1;    // [merged, merged]
    Vector fc1_b;  // [merged]
    Matrix fc2;    // [out_hidden, merged]
    Vector fc2_b;  // [out_hidden]
};

struct VisionWeights {
    Matrix patch_embed;    // [hidden, in_channels * t * p * p], columns in (c, t, ky, kx) order
    Vector patch_embed_b;  // [hidden]
    Matrix pos_embed;      // [num_position_embeddings, hidden]
    std::vector<VisionBlockWeights> blocks;  // depth
    MergerWeights merger;
    std::vector<MergerWeights> deepstack;  // one per deepstack_visual_indexes entry, same order
};

struct TextLayerWeights {
    Vector input_norm;  // [hidden]
    Matrix q;           // [heads * head_dim, hidden]
    Matrix k, v;        // [kv_heads * head_dim, hidden]
    // q | k | v as one matrix when their load-time panels lie back to back (set by
    // PanelWeights::rearrange for bf16, by QuantizedText::quantize for int8; data == nullptr
    // otherwise): one product instead of three, each output still the same chain of
    // operations, so the values are the same bits.
    Matrix qkv;
    Matrix o;               // [hidden, heads * head_dim]
    Vector q_norm, k_norm;  // [head_dim]
    Vector post_norm;       // [hidden]
    Matrix gate, up;        // [intermediate, hidden]
    Matrix down;            // [hidden, intermediate]
};

struct TextWeights {
    Matrix embed;  // [vocab, hidden]
    std::vector<TextLayerWeights> layers;
    Vector final_norm;  // [hidden]
    Matrix lm_head;     // [vocab, hidden]; == embed when tied
};

class ModelWeights {
  public:
    // Opens the folder's safetensors (single or sharded) and binds every tensor. A missing
    // tensor is kNotFound, a wrong shape kInvalidArgument; both name the file (or folder), the
    // tensor, the expected and the actual shape. File-level problems come from io::TensorStore.
    static base::Result<ModelWeights> load(const std::filesystem::path& model_dir,
                                           const ModelConfig& config);

    const VisionWeights& vision() const { return vision_; }
    const TextWeights& text() const { return text_; }
    // Bytes of safetensors mapped (all files of the folder).
    std::uint64_t mapped_bytes() const { return store_.total_bytes(); }
    // Bytes of the load-time copies (widened vectors and converted matrices).
    std::uint64_t copied_bytes() const { return copies_.size(); }
    const io::TensorStore& store() const { return store_; }
    // For load-time rewrites (model/quantize.cpp, model/weight_panels_load.cpp): the matrices,
    // and whether p lies in the load-time copies (not in the mapped files).
    TextWeights& mutable_text() { return text_; }
    VisionWeights& mutable_vision() { return vision_; }
    bool is_copy(const void* p) const {
        const auto a = reinterpret_cast<std::uintptr_t>(p);
        const auto b = reinterpret_cast<std::uintptr_t>(copies_.data());
        return a >= b && a < b + copies_.size();
    }

  private:
    io::TensorStore store_;
    base::AlignedBuffer copies_;
    VisionWeights vision_;
    TextWeights text_;
};

}  // namespace qvl::model
