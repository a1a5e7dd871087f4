#include "model/weights.h"

#include <cstring>
#include <string>
#include <utility>

#include "base/bf16.h"
#include "model/weight_names.h"

namespace qvl::model {

using base::ErrorCode;
using io::DType;
using io::TensorInfo;

namespace {

std::size_t round_up(std::size_t n) {
    constexpr std::size_t a = base::AlignedBuffer::kAlignment;
    return (n + a - 1) / a * a;
}

// Widens `count` elements of any supported dtype to f32; the source may be unaligned.
void widen_to_f32(const TensorInfo& info, float* dst) {
    const std::uint64_t count = info.num_elements();
    for (std::uint64_t i = 0; i < count; ++i) {
        if (info.dtype == DType::kF32) {
            std::memcpy(&dst[i], info.data + 4 * i, 4);
        } else {
            std::uint16_t bits = 0;
            std::memcpy(&bits, info.data + 2 * i, 2);
            dst[i] = info.dtype == DType::kBF16 ? base::bf16_to_f32(base::bf16{bits})
                                                : base::f16_to_f32(bits);
        }
    }
}

// Binds tensors in two passes: bind_*() resolve names, check shapes and record the copies that
// are needed; finish() allocates one buffer for all copies and fills them. The first error wins
// and later calls do nothing.
class Binder {
  public:
    explicit Binder(const io::TensorStore& store) : store_(store) {}

    void matrix(Matrix* out, const std::string& name, int rows, int cols) {
        matrix_shaped(out, name, {rows, cols}, rows, cols);
    }

    // A tensor of any rank viewed as a [rows, cols] matrix (e.g. the Conv3d patch embedding).
    void matrix_shaped(Matrix* out, const std::string& name, const std::vector<std::int64_t>& shape,
                       int rows, int cols) {
        const TensorInfo* info = lookup(name, shape);
        if (info == nullptr) return;
        out->rows = rows;
        out->cols = cols;
        out->ld = cols;
        out->name = info->name.c_str();
        const std::size_t elem = io::dtype_size(info->dtype);
        const bool aligned = reinterpret_cast<std::uintptr_t>(info->data) % elem == 0;
        if (info->dtype == DType::kF16) {
            out->type = kernels::WeightType::kF32;
            add_copy(info, &out->data, nullptr, Copy::kWidenToF32, info->num_elements() * 4);
        } else {
            out->type = info->dtype == DType::kBF16 ? kernels::WeightType::kBF16
                                                    : kernels::WeightType::kF32;
            if (aligned) {
                out->data = info->data;
            } else {
                add_copy(info, &out->data, nullptr, Copy::kRawBytes, info->n_bytes);
            }
        }
    }

    void vector(Vector* out, const std::string& name, int size) {
        const TensorInfo* info = lookup(name, {size});
        if (info == nullptr) return;
        out->size = size;
        add_copy(info, nullptr, &out->data, Copy::kWidenToF32, info->num_elements() * 4);
    }

    base::Status finish(base::AlignedBuffer* buffer) {
        if (!status_.ok()) return status_;
        QVL_ASSIGN_OR_RETURN(*buffer,
                             base::AlignedBuffer::allocate(total_, "converted model weights"));
        for (const Copy& c : copies_) {
            std::byte* dst = buffer->data() + c.offset;
            if (c.kind == Copy::kWidenToF32) {
                widen_to_f32(*c.info, reinterpret_cast<float*>(dst));
            } else {
                std::memcpy(dst, c.info->data, c.info->n_bytes);
            }
            if (c.matrix_slot != nullptr) *c.matrix_slot = dst;
            if (c.vector_slot != nullptr) *c.vector_slot = reinterpret_cast<const float*>(dst);
        }
        return base::Status();
    }

    const TensorInfo* optional(std::string_view name) const { return store_.find(name); }

  private:
    struct Copy {
        enum Kind { kWidenToF32, kRawBytes };
        const TensorInfo* info;
        const void** matrix_slot;
        const float** vector_slot;
        Kind kind;
        std::size_t offset;
    };

    std::string where(std::string_view name) const {
        if (const std::filesystem::path* file = store_.file_of(name)) return file->string();
        if (store_.files().size() == 1) return store_.files()[0].path().string();
        return store_.dir().string();
    }

    const TensorInfo* lookup(const std::string& name, const std::vector<std::int64_t>& shape) {
        if (!status_.ok()) return nullptr;
        const TensorInfo* info = store_.find(name);
        if (info == nullptr) {
            status_ =
                base::error(ErrorCode::kNotFound, "{}: tensor '{}' is missing (expected shape {})",
                            where(name), name, io::shape_string(shape));
            return nullptr;
        }
        if (info->shape != shape) {
            status_ = base::error(
                ErrorCode::kInvalidArgument, "{}: tensor '{}' has shape {}, the config expects {}",
                where(name), name, io::shape_string(info->shape), io::shape_string(shape));
            return nullptr;
        }
        return info;
    }

    void add_copy(const TensorInfo* info, const void** matrix_slot, const float** vector_slot,
                  Copy::Kind kind, std::uint64_t bytes) {
        copies_.push_back({info, matrix_slot, vector_slot, kind, total_});
        total_ += round_up(std::size_t(bytes));
    }

    const io::TensorStore& store_;
    base::Status status_;
    std::vector<Copy> copies_;
    std::size_t total_ = 0;
};

void bind_merger(Binder& b, const std::string& prefix, int norm_size, int merged, int out,
                 MergerWeights* m) {
    using namespace names;
    b.vector(&m->norm_w, prefix + std::string(kMergerNormWeight), norm_size);
    b.vector(&m->norm_b, prefix + std::string(kMergerNormBias), norm_size);
    b.matrix(&m->fc1, prefix + std::string(kMergerFc1Weight), merged, merged);
    b.vector(&m->fc1_b, prefix + std::string(kMergerFc1Bias), merged);
    b.matrix(&m->fc2, prefix + std::string(kMergerFc2Weight), out, merged);
    b.vector(&m->fc2_b, prefix + std::string(kMergerFc2Bias), out);
}

void bind_vision(Binder& b, const VisionConfig& c, VisionWeights* w) {
    using namespace names;
    const int h = c.hidden_size;
    const int patch_cols = c.in_channels * c.temporal_patch_size * c.patch_size * c.patch_size;
    b.matrix_shaped(&w->patch_embed, std::string(kPatchEmbedWeight),
                    {h, c.in_channels, c.temporal_patch_size, c.patch_size, c.patch_size}, h,
                    patch_cols);
    b.vector(&w->patch_embed_b, std::string(kPatchEmbedBias), h);
    b.matrix(&w->pos_embed, std::string(kPosEmbedWeight), c.num_position_embeddings, h);
    w->blocks.resize(std::size_t(c.depth));
    for (int i = 0; i < c.depth; ++i) {
        const std::string p = vision_block(i);
        VisionBlockWeights& blk = w->blocks[std::size_t(i)];
        b.vector(&blk.norm1_w, p + std::string(kNorm1Weight), h);
        b.vector(&blk.norm1_b, p + std::string(kNorm1Bias), h);
        b.matrix(&blk.qkv, p + std::string(kQkvWeight), 3 * h, h);
        b.vector(&blk.qkv_b, p + std::string(kQkvBias), 3 * h);
        b.matrix(&blk.proj, p + std::string(kProjWeight), h, h);
        b.vector(&blk.proj_b, p + std::string(kProjBias), h);
        b.vector(&blk.norm2_w, p + std::string(kNorm2Weight), h);
        b.vector(&blk.norm2_b, p + std::string(kNorm2Bias), h);
        b.matrix(&blk.fc1, p + std::string(kMlpFc1Weight), c.intermediate_size, h);
        b.vector(&blk.fc1_b, p + std::string(kMlpFc1Bias), c.intermediate_size);
        b.matrix(&blk.fc2, p + std::string(kMlpFc2Weight), h, c.intermediate_size);
        b.vector(&blk.fc2_b, p + std::string(kMlpFc2Bias), h);
    }
    const int merged = h * c.spatial_merge_size * c.spatial_merge_size;
    bind_merger(b, std::string(kMerger), h, merged, c.out_hidden_size, &w->merger);
    w->deepstack.resize(c.deepstack_visual_indexes.size());
    for (std::size_t k = 0; k < w->deepstack.size(); ++k) {
        bind_merger(b, deepstack_merger(int(k)), merged, merged, c.out_hidden_size,
                    &w->deepstack[k]);
    }
}

void bind_text(Binder& b, const TextConfig& c, bool tied, TextWeights* w) {
    using namespace names;
    const int h = c.hidden_size;
    const int q_rows = c.num_attention_heads * c.head_dim;
    const int kv_rows = c.num_key_value_heads * c.head_dim;
    b.matrix(&w->embed, std::string(kEmbedTokens), c.vocab_size, h);
    w->layers.resize(std::size_t(c.num_hidden_layers));
    for (int j = 0; j < c.num_hidden_layers; ++j) {
        const std::string p = text_layer(j);
        TextLayerWeights& l = w->layers[std::size_t(j)];
        b.vector(&l.input_norm, p + std::string(kInputNorm), h);
        b.matrix(&l.q, p + std::string(kQProj), q_rows, h);
        b.matrix(&l.k, p + std::string(kKProj), kv_rows, h);
        b.matrix(&l.v, p + std::string(kVProj), kv_rows, h);
        b.matrix(&l.o, p + std::string(kOProj), h, q_rows);
        b.vector(&l.q_norm, p + std::string(kQNorm), c.head_dim);
        b.vector(&l.k_norm, p + std::string(kKNorm), c.head_dim);
        b.vector(&l.post_norm, p + std::string(kPostNorm), h);
        b.matrix(&l.gate, p + std::string(kGateProj), c.intermediate_size, h);
        b.matrix(&l.up, p + std::string(kUpProj), c.intermediate_size, h);
        b.matrix(&l.down, p + std::string(kDownProj), h, c.intermediate_size);
    }
    b.vector(&w->final_norm, std::string(kFinalNorm), h);
    if (!tied) b.matrix(&w->lm_head, std::string(kLmHead), c.vocab_size, h);
}

}  // namespace

base::Result<ModelWeights> ModelWeights::load(const std::filesystem::path& model_dir,
                                              const ModelConfig& config) {
    QVL_TRY(validate_model_config(config, "model config"));
    ModelWeights w;
    QVL_ASSIGN_OR_RETURN(w.store_, io::TensorStore::open_dir(model_dir));
    Binder binder(w.store_);
    bind_vision(binder, config.vision, &w.vision_);
    bind_text(binder, config.text, config.tie_word_embeddings, &w.text_);
    QVL_TRY(binder.finish(&w.copies_));
    // Slots filled by finish() point into copies_, whose storage survives moves of w.
    if (config.tie_word_embeddings) w.text_.lm_head = w.text_.embed;
    return w;
}

}  // namespace qvl::model
