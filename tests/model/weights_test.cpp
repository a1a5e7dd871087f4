// Tests for model/weights: binding the tiny checkpoint (shapes, zero-copy bf16 views, values
// read by hand from the file with numpy, tied lm_head) and the failures of modified copies
// (missing tensor, wrong shape, unsupported dtype, F16 conversion, untied lm_head).
#include "model/weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "io/safetensors_writer.h"
#include "model/weight_names.h"
#include "support/scratch_dir.h"

namespace qvl::model {
namespace {

using base::ErrorCode;
using kernels::WeightType;
using testing::ScratchDir;

const char* const kTinyDir = QVL_TEST_DATA_DIR "/tiny-qwen3vl";

model::ModelConfig tiny_config() {
    auto c = model::load_model_config(std::string(kTinyDir) + "/config.json");
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? c.value() : ModelConfig();
}

std::uint16_t bf16_bits_at(const Matrix& m, int row, int col) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, static_cast<const std::byte*>(m.data) + 2 * (row * m.ld + col), 2);
    return bits;
}

TEST(ModelWeights, BindsTinyCheckpoint) {
    const model::ModelConfig config = tiny_config();
    const auto w = model::ModelWeights::load(kTinyDir, config);
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_EQ(w->mapped_bytes(), 20128616u);

    const model::VisionWeights& v = w->vision();
    ASSERT_EQ(v.blocks.size(), 4u);
    ASSERT_EQ(v.deepstack.size(), 3u);
    EXPECT_EQ(v.patch_embed.rows, 32);
    EXPECT_EQ(v.patch_embed.cols, 3 * 2 * 16 * 16);
    EXPECT_EQ(v.patch_embed.ld, 1536);
    EXPECT_EQ(v.patch_embed.type, WeightType::kBF16);
    EXPECT_STREQ(v.patch_embed.name, "model.visual.patch_embed.proj.weight");
    // [5, 2, 1, 7, 9] of the Conv3d weight = row 5, column ((2 * 2 + 1) * 16 + 7) * 16 + 9.
    EXPECT_EQ(bf16_bits_at(v.patch_embed, 5, ((2 * 2 + 1) * 16 + 7) * 16 + 9), 0x3bc3);
    EXPECT_EQ(v.pos_embed.rows, 64);
    EXPECT_EQ(v.pos_embed.cols, 32);
    EXPECT_EQ(v.blocks[1].qkv.rows, 96);
    EXPECT_EQ(v.blocks[1].qkv.cols, 32);
    EXPECT_EQ(v.blocks[1].qkv_b.size, 96);
    EXPECT_EQ(v.blocks[1].qkv_b.data[50], 0.010009765625f);
    EXPECT_EQ(v.blocks[3].fc1.rows, 64);
    EXPECT_EQ(v.blocks[3].fc2.cols, 64);
    EXPECT_EQ(v.merger.norm_w.size, 32);  // pre-shuffle norm
    EXPECT_EQ(v.merger.fc1.rows, 128);
    EXPECT_EQ(v.merger.fc2.rows, 64);
    EXPECT_EQ(v.deepstack[2].norm_w.size, 128);  // post-shuffle norm
    EXPECT_EQ(v.deepstack[2].norm_w.data[127], 1.0f);
    EXPECT_STREQ(v.deepstack[2].fc2.name, "model.visual.deepstack_merger_list.2.linear_fc2.weight");

    const model::TextWeights& t = w->text();
    ASSERT_EQ(t.layers.size(), 4u);
    EXPECT_EQ(t.embed.rows, 151936);
    EXPECT_EQ(t.embed.cols, 64);
    EXPECT_EQ(t.embed.type, WeightType::kBF16);
    EXPECT_EQ(bf16_bits_at(t.embed, 151655, 3), 0xbcc4);
    EXPECT_EQ(bf16_bits_at(t.embed, 0, 0), 0x3b6d);
    EXPECT_EQ(t.layers[0].q.rows, 64);
    EXPECT_EQ(t.layers[0].k.rows, 32);
    EXPECT_EQ(t.layers[0].v.rows, 32);
    EXPECT_EQ(t.layers[0].o.cols, 64);
    EXPECT_EQ(t.layers[2].q_norm.size, 16);
    EXPECT_EQ(t.layers[1].up.rows, 128);
    EXPECT_EQ(bf16_bits_at(t.layers[1].up, 100, 7), 0x3df6);
    EXPECT_EQ(t.layers[3].down.rows, 64);
    EXPECT_EQ(t.layers[3].down.cols, 128);
    EXPECT_EQ(t.final_norm.size, 64);
    EXPECT_EQ(t.final_norm.data[0], 4.09375f);
    EXPECT_EQ(t.final_norm.data[1], 3.84375f);
    EXPECT_EQ(t.final_norm.data[2], 4.0f);

    // Tied: lm_head is the embedding itself. Zero copy: bf16 matrices are the mmap'd bytes.
    EXPECT_EQ(t.lm_head.data, t.embed.data);
    EXPECT_EQ(t.lm_head.rows, t.embed.rows);
    EXPECT_EQ(t.embed.data, static_cast<const void*>(
                                w->store().find("model.language_model.embed_tokens.weight")->data));
    // Vectors are f32 copies outside the mapping, 64-byte aligned among themselves.
    EXPECT_NE(static_cast<const void*>(t.final_norm.data),
              static_cast<const void*>(w->store().find("model.language_model.norm.weight")->data));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.final_norm.data) % 64, 0u);
    EXPECT_GT(w->copied_bytes(), 0u);
}

// Copies the tiny checkpoint into a scratch folder, letting `edit` change the tensor list
// (names, shapes, dtypes, data) before writing. The config is copied unchanged.
class ModifiedCheckpoint {
  public:
    explicit ModifiedCheckpoint(const std::function<void(std::vector<io::TensorToWrite>&)>& edit) {
        auto src = io::SafetensorsFile::open(std::string(kTinyDir) + "/model.safetensors");
        EXPECT_TRUE(src.ok());
        if (!src.ok()) return;
        std::vector<io::TensorToWrite> tensors;
        for (const io::TensorInfo& t : src->tensors()) {
            tensors.push_back({t.name, t.dtype, t.shape, {t.data, std::size_t(t.n_bytes)}});
        }
        edit(tensors);
        const base::Status s = io::write_safetensors(dir_.path() / "model.safetensors", tensors);
        EXPECT_TRUE(s.ok()) << s.message();
    }
    const std::filesystem::path& path() const { return dir_.path(); }
    std::filesystem::path file() const { return dir_.path() / "model.safetensors"; }

  private:
    ScratchDir dir_;
};

io::TensorToWrite* find(std::vector<io::TensorToWrite>& tensors, std::string_view name) {
    for (io::TensorToWrite& t : tensors) {
        if (t.name == name) return &t;
    }
    ADD_FAILURE() << "no tensor " << name;
    return nullptr;
}

TEST(ModelWeights, MissingTensorIsNamed) {
    const std::string name = names::text_layer(2) + std::string(names::kKNorm);
    ModifiedCheckpoint ckpt([&](std::vector<io::TensorToWrite>& t) {
        t.erase(t.begin() + (find(t, name) - t.data()));
    });
    const auto w = model::ModelWeights::load(ckpt.path(), tiny_config());
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), ErrorCode::kNotFound);
    EXPECT_EQ(w.status().message(),
              ckpt.file().string() + ": tensor '" + name + "' is missing (expected shape [16])");
}

TEST(ModelWeights, WrongShapeIsNamed) {
    ModifiedCheckpoint ckpt([](std::vector<io::TensorToWrite>& t) {
        find(t, "model.language_model.layers.1.mlp.up_proj.weight")->shape = {64, 128};
    });
    const auto w = model::ModelWeights::load(ckpt.path(), tiny_config());
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(w.status().message(),
              ckpt.file().string() +
                  ": tensor 'model.language_model.layers.1.mlp.up_proj."
                  "weight' has shape [64, 128], the config expects [128, 64]");
}

TEST(ModelWeights, ConfigMismatchIsNamed) {
    model::ModelConfig config = tiny_config();
    config.vision.intermediate_size = 48;
    const auto w = model::ModelWeights::load(kTinyDir, config);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(w.status().message().find("tensor 'model.visual.blocks.0.mlp.linear_fc1.weight' "
                                        "has shape [64, 32], the config expects [48, 32]"),
              std::string::npos)
        << w.status().message();
}

TEST(ModelWeights, UnsupportedDtypeIsNamed) {
    // Same bytes, header edited in place: the pos_embed entry claims dtype I16.
    std::ifstream in(std::string(kTinyDir) + "/model.safetensors", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = R"("model.visual.pos_embed.weight":{"dtype":"BF16")";
    const std::size_t at = bytes.find(from);
    ASSERT_NE(at, std::string::npos);
    bytes.replace(at, from.size(), R"("model.visual.pos_embed.weight":{"dtype":"I16" )");
    ScratchDir dir;
    const auto file = dir.write("model.safetensors", bytes);
    const auto w = model::ModelWeights::load(dir.path(), tiny_config());
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), ErrorCode::kUnsupported);
    EXPECT_EQ(w.status().message(), file.string() +
                                        ": tensor 'model.visual.pos_embed.weight': dtype I16 is "
                                        "not supported (qvl reads BF16, F16, F32)");
}

TEST(ModelWeights, MisalignedDataIsCopied) {
    // One extra space at the end of the header shifts the data section to an odd address, so
    // no bf16 matrix can be used in place; each gets an aligned copy with the same bits.
    std::ifstream in(std::string(kTinyDir) + "/model.safetensors", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = (header << 8) | std::uint8_t(bytes[std::size_t(i)]);
    const std::string_view all(bytes);
    std::string shifted;
    for (int i = 0; i < 8; ++i) shifted.push_back(char(((header + 1) >> (8 * i)) & 0xff));
    shifted.append(all.substr(8, header));
    shifted.push_back(' ');
    shifted.append(all.substr(8 + header));
    ScratchDir dir;
    dir.write("model.safetensors", shifted);
    const auto w = model::ModelWeights::load(dir.path(), tiny_config());
    ASSERT_TRUE(w.ok()) << w.status().message();
    const Matrix& up = w->text().layers[1].up;
    EXPECT_EQ(up.type, WeightType::kBF16);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(up.data) % 2, 0u);
    EXPECT_NE(up.data, static_cast<const void*>(w->store().find(up.name)->data));
    EXPECT_EQ(bf16_bits_at(up, 100, 7), 0x3df6);
    EXPECT_EQ(bf16_bits_at(w->text().embed, 151655, 3), 0xbcc4);
    EXPECT_EQ(w->text().lm_head.data, w->text().embed.data);
    EXPECT_EQ(w->text().final_norm.data[1], 3.84375f);
    EXPECT_GT(w->copied_bytes(), 151936u * 64 * 2);
}

TEST(ModelWeights, F16AndF32TensorsAreConverted) {
    // q_proj of layer 0 as F16 (widened to an f32 copy), o_proj as F32 (zero copy), the final
    // norm as F32.
    const std::string q_name = names::text_layer(0) + std::string(names::kQProj);
    const std::string o_name = names::text_layer(0) + std::string(names::kOProj);
    std::vector<std::uint16_t> q_f16(64 * 64);
    std::vector<float> o_f32(64 * 64);
    std::vector<float> norm_f32(64);
    for (std::size_t i = 0; i < q_f16.size(); ++i) {
        q_f16[i] = std::uint16_t(0x3c00 + (i % 512));  // 1.0 + (i % 512) / 1024
        o_f32[i] = float(i) * 0.25f;
    }
    for (std::size_t i = 0; i < norm_f32.size(); ++i) norm_f32[i] = 1.0f + float(i);
    ModifiedCheckpoint ckpt([&](std::vector<io::TensorToWrite>& t) {
        io::TensorToWrite* q = find(t, q_name);
        q->dtype = io::DType::kF16;
        q->data = std::as_bytes(std::span(q_f16));
        io::TensorToWrite* o = find(t, o_name);
        o->dtype = io::DType::kF32;
        o->data = std::as_bytes(std::span(o_f32));
        io::TensorToWrite* n = find(t, names::kFinalNorm);
        n->dtype = io::DType::kF32;
        n->data = std::as_bytes(std::span(norm_f32));
    });
    const auto w = model::ModelWeights::load(ckpt.path(), tiny_config());
    ASSERT_TRUE(w.ok()) << w.status().message();
    const TextLayerWeights& l = w->text().layers[0];
    EXPECT_EQ(l.q.type, WeightType::kF32);
    const float* q = static_cast<const float*>(l.q.data);
    EXPECT_EQ(q[0], 1.0f);
    EXPECT_EQ(q[513], 1.0f + 1.0f / 1024);
    EXPECT_EQ(q[63 * 64 + 63], 1.0f + float((63 * 64 + 63) % 512) / 1024);
    EXPECT_EQ(l.o.type, WeightType::kF32);
    EXPECT_EQ(l.o.data, static_cast<const void*>(w->store().find(o_name)->data));
    EXPECT_EQ(static_cast<const float*>(l.o.data)[100], 25.0f);
    EXPECT_EQ(w->text().final_norm.data[63], 64.0f);
    // Untouched layers still point into the mapping.
    EXPECT_EQ(w->text().layers[1].q.type, WeightType::kBF16);
}

TEST(ModelWeights, UntiedLmHead) {
    std::vector<std::uint16_t> head(std::size_t(151936) * 64, base::f32_to_bf16(0.5f).bits);
    ModifiedCheckpoint ckpt([&](std::vector<io::TensorToWrite>& t) {
        t.push_back({std::string(names::kLmHead),
                     io::DType::kBF16,
                     {151936, 64},
                     std::as_bytes(std::span(head))});
    });
    model::ModelConfig config = tiny_config();
    // Tied: a present lm_head.weight is ignored.
    const auto tied = model::ModelWeights::load(ckpt.path(), config);
    ASSERT_TRUE(tied.ok()) << tied.status().message();
    EXPECT_EQ(tied->text().lm_head.data, tied->text().embed.data);

    config.tie_word_embeddings = false;
    config.text.tie_word_embeddings = false;
    const auto untied = model::ModelWeights::load(ckpt.path(), config);
    ASSERT_TRUE(untied.ok()) << untied.status().message();
    EXPECT_NE(untied->text().lm_head.data, untied->text().embed.data);
    EXPECT_STREQ(untied->text().lm_head.name, "lm_head.weight");
    EXPECT_EQ(bf16_bits_at(untied->text().lm_head, 151935, 63), base::f32_to_bf16(0.5f).bits);

    // Untied but absent.
    const auto missing = model::ModelWeights::load(kTinyDir, config);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
    EXPECT_NE(missing.status().message().find("tensor 'lm_head.weight' is missing"),
              std::string::npos)
        << missing.status().message();
}

TEST(ModelWeights, MissingFolder) {
    ScratchDir dir;
    const auto w = model::ModelWeights::load(dir.path() / "nope", tiny_config());
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), ErrorCode::kNotFound);
}

// The real 2B layout (spec §2.1, names and shapes typed in from the spec table, not from
// weight_names.h) in a sparse file: the header is real, the 4.26 GB data section is a hole that
// reads as zeros. Binds against the checked-in 2B config.
TEST(ModelWeights, BindsReal2bLayoutFromSparseFile) {
    const auto config =
        model::load_model_config(QVL_TEST_DATA_DIR "/configs/qwen3vl-2b-config.json");
    ASSERT_TRUE(config.ok()) << config.status().message();
    std::vector<io::TensorSpec> specs;
    const auto add = [&](std::string name, std::vector<std::int64_t> shape) {
        specs.push_back({std::move(name), io::DType::kBF16, std::move(shape)});
    };
    const std::string v = "model.visual.";
    add(v + "patch_embed.proj.weight", {1024, 3, 2, 16, 16});
    add(v + "patch_embed.proj.bias", {1024});
    add(v + "pos_embed.weight", {2304, 1024});
    for (int i = 0; i < 24; ++i) {
        const std::string b = fmt::format("{}blocks.{}.", v, i);
        add(b + "norm1.weight", {1024});
        add(b + "norm1.bias", {1024});
        add(b + "attn.qkv.weight", {3072, 1024});
        add(b + "attn.qkv.bias", {3072});
        add(b + "attn.proj.weight", {1024, 1024});
        add(b + "attn.proj.bias", {1024});
        add(b + "norm2.weight", {1024});
        add(b + "norm2.bias", {1024});
        add(b + "mlp.linear_fc1.weight", {4096, 1024});
        add(b + "mlp.linear_fc1.bias", {4096});
        add(b + "mlp.linear_fc2.weight", {1024, 4096});
        add(b + "mlp.linear_fc2.bias", {1024});
    }
    const auto merger = [&](const std::string& m, int norm) {
        add(m + "norm.weight", {norm});
        add(m + "norm.bias", {norm});
        add(m + "linear_fc1.weight", {4096, 4096});
        add(m + "linear_fc1.bias", {4096});
        add(m + "linear_fc2.weight", {2048, 4096});
        add(m + "linear_fc2.bias", {2048});
    };
    merger(v + "merger.", 1024);
    for (int k = 0; k < 3; ++k) merger(fmt::format("{}deepstack_merger_list.{}.", v, k), 4096);
    const std::string t = "model.language_model.";
    add(t + "embed_tokens.weight", {151936, 2048});
    for (int j = 0; j < 28; ++j) {
        const std::string l = fmt::format("{}layers.{}.", t, j);
        add(l + "input_layernorm.weight", {2048});
        add(l + "self_attn.q_proj.weight", {2048, 2048});
        add(l + "self_attn.k_proj.weight", {1024, 2048});
        add(l + "self_attn.v_proj.weight", {1024, 2048});
        add(l + "self_attn.o_proj.weight", {2048, 2048});
        add(l + "self_attn.q_norm.weight", {128});
        add(l + "self_attn.k_norm.weight", {128});
        add(l + "post_attention_layernorm.weight", {2048});
        add(l + "mlp.gate_proj.weight", {6144, 2048});
        add(l + "mlp.up_proj.weight", {6144, 2048});
        add(l + "mlp.down_proj.weight", {2048, 6144});
    }
    add(t + "norm.weight", {2048});
    ASSERT_EQ(specs.size(), 625u);  // spec §2.1: 315 vision + 310 text

    ScratchDir dir;
    const auto path = dir.path() / "model.safetensors";
    std::uint64_t data_bytes = 0;
    {
        auto writer = io::SafetensorsWriter::create(path, specs);
        ASSERT_TRUE(writer.ok()) << writer.status().message();
        data_bytes = writer->data_bytes_expected();
    }                                    // closed without data: only the header is on disk
    EXPECT_EQ(data_bytes, 4255064064u);  // spec §2.3
    std::filesystem::resize_file(path, std::filesystem::file_size(path) + data_bytes);

    const auto w = model::ModelWeights::load(dir.path(), config.value());
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_EQ(w->vision().blocks.size(), 24u);
    EXPECT_EQ(w->vision().deepstack.size(), 3u);
    EXPECT_EQ(w->vision().patch_embed.cols, 1536);
    EXPECT_EQ(w->vision().deepstack[0].norm_w.size, 4096);
    EXPECT_EQ(w->text().layers.size(), 28u);
    EXPECT_EQ(w->text().layers[27].down.cols, 6144);
    EXPECT_EQ(w->text().lm_head.data, w->text().embed.data);
    EXPECT_EQ(w->text().final_norm.data[2047], 0.0f);
    EXPECT_GT(w->mapped_bytes(), data_bytes);
}

}  // namespace
}  // namespace qvl::model
