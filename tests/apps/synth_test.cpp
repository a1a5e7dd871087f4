// qvl-synth's pieces, in-process: the configuration files against the published byte counts and
// the tiny test checkpoint, the tensor list against spec section 2.1, and a tiny checkpoint
// written to disk and read back with a small independent header parser.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "io/json.h"
#include "qvl_synth/random_weights.h"
#include "qvl_synth/synth_checkpoint.h"
#include "qvl_synth/synth_model.h"

namespace qvl::synth {
namespace {

namespace fs = std::filesystem;

const fs::path kTinyDir = fs::path(QVL_TEST_DATA_DIR) / "tiny-qwen3vl";

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A scratch folder removed at the end of the test.
class ScratchDir {
  public:
    explicit ScratchDir(const std::string& tag)
        : path_(fs::temp_directory_path() /
                ("qvl_synth_test_" + tag + "_" + std::to_string(::getpid()))) {
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

// The header and data size io::SafetensorsWriter announces for the tensors (all BF16).
struct Layout {
    std::string header;
    std::uint64_t data_bytes = 0;
    std::uint64_t file_bytes() const { return 8 + header.size() + data_bytes; }
};

Layout layout_of(const std::vector<TensorSpec>& tensors) {
    Layout layout;
    base::Result<std::string> header =
        io::safetensors_header("layout", bf16_specs(tensors), &layout.data_bytes);
    EXPECT_TRUE(header.ok()) << header.status().message();
    if (header.ok()) layout.header = header.value();
    return layout;
}

struct HeaderEntry {
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0, end = 0;
};

struct ParsedFile {
    std::uint64_t header_len = 0;
    std::map<std::string, HeaderEntry> tensors;
    std::string data;  // the data section
};

// Independent of the writer: length prefix, JSON via the engine's DOM, offsets as written.
ParsedFile parse_safetensors(const fs::path& path) {
    ParsedFile f;
    const std::string bytes = read_bytes(path);
    EXPECT_GE(bytes.size(), 8u);
    if (bytes.size() < 8) return f;
    for (int i = 7; i >= 0; --i) f.header_len = (f.header_len << 8) | std::uint8_t(bytes[i]);
    EXPECT_LE(8 + f.header_len, bytes.size());
    if (8 + f.header_len > bytes.size()) return f;
    auto json = io::parse_json(std::string_view(bytes).substr(8, f.header_len), path.string());
    EXPECT_TRUE(json.ok()) << json.status().message();
    if (!json.ok()) return f;
    for (const auto& [name, value] : json->members()) {
        if (name == "__metadata__") continue;
        HeaderEntry e;
        e.dtype = value.find("dtype")->as_string();
        for (const io::JsonValue& d : value.find("shape")->items()) e.shape.push_back(d.as_int());
        e.begin = std::uint64_t(value.find("data_offsets")->items()[0].as_int());
        e.end = std::uint64_t(value.find("data_offsets")->items()[1].as_int());
        EXPECT_TRUE(f.tensors.emplace(name, e).second) << "duplicate " << name;
    }
    f.data = bytes.substr(8 + f.header_len);
    return f;
}

std::vector<float> tensor_values(const ParsedFile& f, const HeaderEntry& e) {
    std::vector<float> v((e.end - e.begin) / 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
        base::bf16 b;
        std::memcpy(&b.bits, f.data.data() + e.begin + 2 * i, 2);
        v[i] = base::bf16_to_f32(b);
    }
    return v;
}

TEST(SynthModelTest, RealConfigFilesHaveThePublishedSizes) {
    const std::string config = config_json(real_dims());
    EXPECT_EQ(config.size(), 1505u);
    EXPECT_EQ(generation_config_json().size(), 269u);
    EXPECT_EQ(preprocessor_config_json(real_dims()).size(), 390u);

    auto json = io::parse_json(config, "config.json");
    ASSERT_TRUE(json.ok()) << json.status().message();
    const io::JsonValue* text = json->find("text_config");
    const io::JsonValue* vision = json->find("vision_config");
    ASSERT_TRUE(text && vision);
    EXPECT_EQ(text->find("hidden_size")->as_int(), 2048);
    EXPECT_EQ(text->find("num_hidden_layers")->as_int(), 28);
    EXPECT_EQ(text->find("rope_scaling")->find("mrope_section")->items()[1].as_int(), 20);
    EXPECT_EQ(vision->find("depth")->as_int(), 24);
    EXPECT_EQ(vision->find("deepstack_visual_indexes")->items()[2].as_int(), 17);

    for (const std::string& text_file :
         {generation_config_json(), preprocessor_config_json(real_dims())}) {
        EXPECT_TRUE(io::parse_json(text_file, "config").ok());
    }
    auto pre = io::parse_json(preprocessor_config_json(real_dims()), "preprocessor_config.json");
    ASSERT_TRUE(pre.ok());
    EXPECT_EQ(pre->find("size")->find("shortest_edge")->as_int(), 65536);
}

TEST(SynthModelTest, TinyConfigIsTheTestCheckpointsConfig) {
    EXPECT_EQ(config_json(tiny_dims()), read_bytes(kTinyDir / "config.json"));
}

TEST(SynthModelTest, RealTensorListFollowsTheSpec) {
    const std::vector<TensorSpec> tensors = checkpoint_tensors(real_dims());
    ASSERT_EQ(tensors.size(), 625u);
    std::map<std::string, std::vector<std::int64_t>> shapes;
    std::int64_t params = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (i > 0) {
            EXPECT_LT(tensors[i - 1].name, tensors[i].name);
        }
        shapes[tensors[i].name] = tensors[i].shape;
        params += element_count(tensors[i].shape);
    }
    EXPECT_EQ(params, 2127532032);
    EXPECT_EQ(shapes.count("lm_head.weight"), 0u);
    using Shape = std::vector<std::int64_t>;
    const std::string v = "model.visual.", t = "model.language_model.";
    EXPECT_EQ(shapes[v + "patch_embed.proj.weight"], (Shape{1024, 3, 2, 16, 16}));
    EXPECT_EQ(shapes[v + "pos_embed.weight"], (Shape{2304, 1024}));
    EXPECT_EQ(shapes[v + "blocks.23.attn.qkv.weight"], (Shape{3072, 1024}));
    EXPECT_EQ(shapes[v + "blocks.0.mlp.linear_fc2.weight"], (Shape{1024, 4096}));
    EXPECT_EQ(shapes[v + "merger.norm.weight"], (Shape{1024}));
    EXPECT_EQ(shapes[v + "merger.linear_fc1.weight"], (Shape{4096, 4096}));
    EXPECT_EQ(shapes[v + "deepstack_merger_list.2.norm.bias"], (Shape{4096}));
    EXPECT_EQ(shapes[v + "deepstack_merger_list.0.linear_fc2.weight"], (Shape{2048, 4096}));
    EXPECT_EQ(shapes[t + "embed_tokens.weight"], (Shape{151936, 2048}));
    EXPECT_EQ(shapes[t + "layers.27.self_attn.k_proj.weight"], (Shape{1024, 2048}));
    EXPECT_EQ(shapes[t + "layers.0.self_attn.q_norm.weight"], (Shape{128}));
    EXPECT_EQ(shapes[t + "layers.5.mlp.down_proj.weight"], (Shape{2048, 6144}));
    EXPECT_EQ(shapes[t + "norm.weight"], (Shape{2048}));

    const Layout layout = layout_of(tensors);
    EXPECT_EQ(layout.data_bytes, 4255064064u);
    EXPECT_EQ(layout.header.size() % 8, 0u);
    EXPECT_TRUE(io::parse_json(layout.header, "header").ok());
}

TEST(SynthModelTest, ValuesDependOnlyOnSeedTensorAndIndex) {
    const TensorSpec spec{"w", {1000}, 0.0f, 0.5f};
    std::vector<std::uint16_t> whole(1000), part(1000, 0);
    fill_random_bf16(spec, tensor_key(7, 3), 0, 1000, whole.data());
    // Slices with unaligned starts and odd lengths reproduce the same elements.
    for (const auto& [first, n] : {std::pair{0, 1}, {1, 3}, {3, 17}, {5, 300}, {997, 3}}) {
        fill_random_bf16(spec, tensor_key(7, 3), first, n, part.data() + first);
        for (int i = first; i < first + n; ++i) ASSERT_EQ(part[i], whole[i]) << i;
    }
    std::vector<std::uint16_t> other(1000);
    fill_random_bf16(spec, tensor_key(8, 3), 0, 1000, other.data());
    EXPECT_NE(other, whole);
    fill_random_bf16(spec, tensor_key(7, 4), 0, 1000, other.data());
    EXPECT_NE(other, whole);

    // Uniform in [-0.5, 0.5]: bounded, centred, with std near 0.5 / sqrt(3).
    double sum = 0, sum_sq = 0;
    for (std::uint16_t bits : whole) {
        const float x = base::bf16_to_f32(base::bf16{bits});
        ASSERT_LE(std::fabs(x), 0.5f);
        sum += x;
        sum_sq += double(x) * x;
    }
    EXPECT_NEAR(sum / 1000, 0.0, 0.05);
    EXPECT_NEAR(std::sqrt(sum_sq / 1000), 0.5 / std::sqrt(3.0), 0.03);
}

TEST(SynthModelTest, TinyLayoutIsTheTestCheckpointsLayout) {
    // tests/data/tiny-qwen3vl was written by Python's safetensors; with the same dimensions our
    // header (names, shapes, offsets, padding) is byte-identical.
    const Layout layout = layout_of(checkpoint_tensors(tiny_dims()));
    std::ifstream in(kTinyDir / "model.safetensors", std::ios::binary);
    std::string theirs(8 + layout.header.size(), '\0');
    in.read(theirs.data(), std::streamsize(theirs.size()));
    ASSERT_TRUE(in.good());
    EXPECT_EQ(theirs.substr(8), layout.header);
    std::uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | std::uint8_t(theirs[std::size_t(i)]);
    EXPECT_EQ(len, layout.header.size());
    EXPECT_EQ(fs::file_size(kTinyDir / "model.safetensors"), layout.file_bytes());
}

TEST(SynthCheckpointTest, TinyCheckpointReadsBack) {
    ScratchDir dir("tiny");
    SynthOptions options;
    options.out_dir = dir.path() / "model";
    options.tokenizer_dir = kTinyDir;
    options.seed = 42;
    options.dims = tiny_dims();
    options.dims.vocab_size = 2000;  // small file: the test runs under sanitizers too
    const base::Status status = write_synthetic_checkpoint(options);
    ASSERT_TRUE(status.ok()) << status.message();

    for (const char* name : {"config.json", "generation_config.json", "preprocessor_config.json",
                             "tokenizer.json", "tokenizer_config.json", "chat_template.json"}) {
        EXPECT_TRUE(fs::is_regular_file(options.out_dir / name)) << name;
    }
    EXPECT_FALSE(fs::exists(options.out_dir / "model.safetensors.partial"));
    EXPECT_EQ(read_bytes(options.out_dir / "tokenizer_config.json"),
              read_bytes(kTinyDir / "tokenizer_config.json"));
    EXPECT_EQ(read_bytes(options.out_dir / "config.json"), config_json(options.dims));

    // Every tensor of the list, BF16, with its shape; offsets back to back.
    const fs::path file = options.out_dir / "model.safetensors";
    const ParsedFile written = parse_safetensors(file);
    EXPECT_EQ(written.header_len % 8, 0u);
    const std::vector<TensorSpec> specs = checkpoint_tensors(options.dims);
    ASSERT_EQ(written.tensors.size(), specs.size());
    std::map<std::uint64_t, std::uint64_t> ranges;
    for (const TensorSpec& spec : specs) {
        SCOPED_TRACE(spec.name);
        auto it = written.tensors.find(spec.name);
        ASSERT_NE(it, written.tensors.end());
        const HeaderEntry& e = it->second;
        EXPECT_EQ(e.dtype, "BF16");
        EXPECT_EQ(e.shape, spec.shape);
        EXPECT_EQ(e.end - e.begin, std::uint64_t(element_count(e.shape)) * 2);
        ranges[e.begin] = e.end;
    }
    std::uint64_t expect_begin = 0;
    for (const auto& [begin, end] : ranges) {
        EXPECT_EQ(begin, expect_begin);
        expect_begin = end;
    }
    EXPECT_EQ(written.data.size(), expect_begin);
    EXPECT_EQ(fs::file_size(file), 8 + written.header_len + expect_begin);

    // Scales: norms near 1, linear weights within sqrt(3)/sqrt(fan_in), embeddings small.
    const std::string t = "model.language_model.";
    for (float x :
         tensor_values(written, written.tensors.at(t + "layers.1.input_layernorm.weight"))) {
        EXPECT_NEAR(x, 1.0f, 0.051f);
    }
    const std::vector<float> down =
        tensor_values(written, written.tensors.at(t + "layers.3.mlp.down_proj.weight"));
    const float bound = std::sqrt(3.0f) / std::sqrt(128.0f);
    std::set<float> distinct;
    for (float x : down) {
        ASSERT_LE(std::fabs(x), bound * 1.004f);
        distinct.insert(x);
    }
    EXPECT_GT(distinct.size(), 100u);
    for (float x : tensor_values(written, written.tensors.at(t + "embed_tokens.weight"))) {
        ASSERT_TRUE(std::isfinite(x));
        ASSERT_LE(std::fabs(x), 0.035f);
    }
}

TEST(SynthCheckpointTest, BytesDoNotDependOnThreadsOrChunks) {
    ScratchDir dir("chunks");
    SynthDims dims = tiny_dims();
    dims.vocab_size = 1000;  // keeps the files small
    const std::vector<TensorSpec> tensors = checkpoint_tensors(dims);
    WriteOptions one;
    one.seed = 5;
    one.n_threads = 1;
    WriteOptions many = one;
    many.n_threads = 3;
    many.chunk_bytes = 4098;  // chunks start inside tensors, at element offsets not multiple of 4
    ASSERT_TRUE(write_random_safetensors(dir.path() / "a", tensors, one).ok());
    ASSERT_TRUE(write_random_safetensors(dir.path() / "b", tensors, many).ok());
    const std::string a = read_bytes(dir.path() / "a");
    EXPECT_EQ(a.size(), layout_of(tensors).file_bytes());
    EXPECT_EQ(a, read_bytes(dir.path() / "b"));
    WriteOptions reseeded = one;
    reseeded.seed = 6;
    ASSERT_TRUE(write_random_safetensors(dir.path() / "c", tensors, reseeded).ok());
    const std::string c = read_bytes(dir.path() / "c");
    ASSERT_EQ(c.size(), a.size());
    const std::size_t data_start = 8 + layout_of(tensors).header.size();
    EXPECT_EQ(c.substr(0, data_start), a.substr(0, data_start));
    EXPECT_NE(c, a);
}

TEST(SynthCheckpointTest, ErrorsNameTheFile) {
    ScratchDir dir("errors");
    SynthOptions options;
    options.out_dir = dir.path() / "out";
    options.tokenizer_dir = dir.path() / "no_tokenizer_here";
    options.dims = tiny_dims();
    base::Status status = write_synthetic_checkpoint(options);
    EXPECT_EQ(status.code(), base::ErrorCode::kNotFound);
    EXPECT_NE(status.message().find("no_tokenizer_here/tokenizer.json"), std::string::npos)
        << status.message();

    std::ofstream(dir.path() / "a_file") << "x";
    options.tokenizer_dir = kTinyDir;
    options.out_dir = dir.path() / "a_file";
    status = write_synthetic_checkpoint(options);
    EXPECT_EQ(status.code(), base::ErrorCode::kIo);
    EXPECT_NE(status.message().find("a_file"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace qvl::synth
