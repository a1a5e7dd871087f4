// Tests for io/safetensors and io/safetensors_writer: a table of hand-made corrupt files, each
// expecting its ErrorCode and a message fragment; good files round-tripped through the writer
// (zero-copy views); sharded folders and their failures.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "io/safetensors_writer.h"
#include "support/scratch_dir.h"

namespace qvl::io {
namespace {

using base::ErrorCode;
using testing::ScratchDir;

std::string le64(std::uint64_t n) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[std::size_t(i)] = char((n >> (8 * i)) & 0xff);
    return s;
}

// A file with this header text and `data_bytes` bytes of data section.
std::string file_bytes(const std::string& header, std::size_t data_bytes) {
    return le64(header.size()) + header + std::string(data_bytes, '\x11');
}

// One F32 [2, 2] tensor named "w" with the given entry fields spliced in.
std::string one_tensor(const std::string& entry) { return R"({"w":{)" + entry + "}}"; }

struct CorruptCase {
    std::string name;
    std::string bytes;
    ErrorCode code;
    std::string fragment;
};

std::vector<CorruptCase> corrupt_cases() {
    const std::string good_entry = R"("dtype":"F32","shape":[2,2],"data_offsets":[0,16])";
    std::vector<CorruptCase> c;
    c.push_back({"EmptyFile", "", ErrorCode::kCorruptFile, "empty file"});
    c.push_back({"ShorterThanLength", "abc", ErrorCode::kCorruptFile,
                 "file is 3 bytes, too short for the 8-byte header length"});
    c.push_back({"HeaderLongerThanFile", le64(1000) + "{}", ErrorCode::kCorruptFile,
                 "header length 1000 exceeds the 2 bytes after the length prefix"});
    c.push_back({"HeaderOverLimit", le64(std::uint64_t(1) << 40) + "{}", ErrorCode::kCorruptFile,
                 "header length 1099511627776 is over the limit of 104857600 bytes"});
    c.push_back({"HugeLengthAllOnes", le64(~std::uint64_t(0)) + "{}", ErrorCode::kCorruptFile,
                 "is over the limit"});
    c.push_back(
        {"ZeroLengthHeader", file_bytes("", 16), ErrorCode::kCorruptFile, "header: invalid JSON"});
    c.push_back({"BadJson", file_bytes(R"({"w": {"dtype": )", 16), ErrorCode::kCorruptFile,
                 "header: invalid JSON"});
    c.push_back({"NotUtf8", file_bytes("{\"\xff\xfe\":1}", 0), ErrorCode::kCorruptFile,
                 "header: invalid JSON"});
    c.push_back({"HeaderIsArray", file_bytes("[1, 2]", 0), ErrorCode::kCorruptFile,
                 "header is an array, expected a JSON object"});
    c.push_back({"EntryNotObject", file_bytes(R"({"w": 3})", 0), ErrorCode::kCorruptFile,
                 "tensor 'w': entry is a number, expected an object"});
    c.push_back({"MissingDtype",
                 file_bytes(one_tensor(R"("shape":[2,2],"data_offsets":[0,16])"), 16),
                 ErrorCode::kCorruptFile, "tensor 'w': missing 'dtype'"});
    c.push_back({"MissingShape",
                 file_bytes(one_tensor(R"("dtype":"F32","data_offsets":[0,16])"), 16),
                 ErrorCode::kCorruptFile, "tensor 'w': missing 'shape'"});
    c.push_back({"MissingOffsets", file_bytes(one_tensor(R"("dtype":"F32","shape":[2,2])"), 16),
                 ErrorCode::kCorruptFile, "tensor 'w': missing 'data_offsets'"});
    c.push_back({"DtypeNotString",
                 file_bytes(one_tensor(R"("dtype":7,"shape":[2,2],"data_offsets":[0,16])"), 16),
                 ErrorCode::kCorruptFile, "tensor 'w': 'dtype' is a number, expected a string"});
    c.push_back({"ShapeNotArray",
                 file_bytes(one_tensor(R"("dtype":"F32","shape":"2x2","data_offsets":[0,16])"), 16),
                 ErrorCode::kCorruptFile, "tensor 'w': 'shape' is a string, expected an array"});
    c.push_back({"UnsupportedDtypeI64",
                 file_bytes(one_tensor(R"("dtype":"I64","shape":[2,2],"data_offsets":[0,32])"), 32),
                 ErrorCode::kUnsupported, "tensor 'w': dtype I64 is not supported"});
    c.push_back({"UnknownDtype",
                 file_bytes(one_tensor(R"("dtype":"Q7","shape":[2,2],"data_offsets":[0,16])"), 16),
                 ErrorCode::kUnsupported, "tensor 'w': dtype Q7 is not supported"});
    c.push_back(
        {"NegativeDim",
         file_bytes(one_tensor(R"("dtype":"F32","shape":[2,-2],"data_offsets":[0,16])"), 16),
         ErrorCode::kCorruptFile, "shape has a dimension that is not a non-negative integer"});
    c.push_back(
        {"FractionalDim",
         file_bytes(one_tensor(R"("dtype":"F32","shape":[2,1.5],"data_offsets":[0,16])"), 16),
         ErrorCode::kCorruptFile, "(dimension 1)"});
    c.push_back({"OverflowingShape",
                 file_bytes(one_tensor(R"("dtype":"F32","shape":[4611686018427387904,4],)"
                                       R"("data_offsets":[0,16])"),
                            16),
                 ErrorCode::kCorruptFile, "overflows 64-bit byte counts"});
    c.push_back({"SizeMismatch",
                 file_bytes(one_tensor(R"("dtype":"F32","shape":[2,2],"data_offsets":[0,8])"), 16),
                 ErrorCode::kCorruptFile,
                 "tensor 'w': F32 [2, 2] needs 16 bytes, its range holds 8"});
    c.push_back({"BeginAfterEnd",
                 file_bytes(one_tensor(R"("dtype":"F32","shape":[2,2],"data_offsets":[16,0])"), 16),
                 ErrorCode::kCorruptFile, "tensor 'w': data_offsets begin 16 is after end 0"});
    c.push_back({"RangePastData", file_bytes(one_tensor(good_entry), 12), ErrorCode::kCorruptFile,
                 "tensor 'w': data_offsets [0, 16) run past the data section of 12 bytes"});
    c.push_back(
        {"OffsetsThreeItems",
         file_bytes(one_tensor(R"("dtype":"F32","shape":[2,2],"data_offsets":[0,8,16])"), 16),
         ErrorCode::kCorruptFile, "'data_offsets' must be two non-negative integers"});
    c.push_back(
        {"OffsetsNegative",
         file_bytes(one_tensor(R"("dtype":"F32","shape":[2,2],"data_offsets":[-16,0])"), 16),
         ErrorCode::kCorruptFile, "'data_offsets' must be two non-negative integers"});
    c.push_back({"OffsetsHuge",
                 file_bytes(one_tensor(R"("dtype":"F32","shape":[2,2],)"
                                       R"("data_offsets":[18446744073709551600,16])"),
                            16),
                 ErrorCode::kCorruptFile, "'data_offsets' must be two non-negative integers"});
    c.push_back({"Overlap",
                 file_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                            R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                            24),
                 ErrorCode::kCorruptFile, "tensors 'a' [0, 16) and 'b' [8, 24) overlap"});
    c.push_back({"DuplicateName",
                 file_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                            R"("a":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}})",
                            32),
                 ErrorCode::kCorruptFile, "tensor 'a' appears twice in the header"});
    c.push_back({"DeepNesting", file_bytes(std::string(100000, '[') + std::string(100000, ']'), 0),
                 ErrorCode::kCorruptFile, "header: invalid JSON"});
    c.push_back({"TrailingGarbage", file_bytes(one_tensor(good_entry) + "x", 16),
                 ErrorCode::kCorruptFile, "header: invalid JSON"});
    return c;
}

class CorruptFileTest : public ::testing::TestWithParam<CorruptCase> {};

TEST_P(CorruptFileTest, FailsWithItsError) {
    const CorruptCase& c = GetParam();
    ScratchDir dir;
    const auto path = dir.write("bad.safetensors", c.bytes);
    const base::Result<SafetensorsFile> file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.ok()) << c.name;
    EXPECT_EQ(file.status().code(), c.code) << file.status().message();
    EXPECT_NE(file.status().message().find(c.fragment), std::string::npos)
        << "message: " << file.status().message() << "\nexpected fragment: " << c.fragment;
    // Every message names the file.
    EXPECT_NE(file.status().message().find(path.string()), std::string::npos)
        << file.status().message();
}

INSTANTIATE_TEST_SUITE_P(Table, CorruptFileTest, ::testing::ValuesIn(corrupt_cases()),
                         [](const ::testing::TestParamInfo<CorruptCase>& info) {
                             return info.param.name;
                         });

TEST(SafetensorsFile, TruncatedRealCheckpoint) {
    // The tiny checkpoint cut short: the header is intact but the last tensors run past the end.
    std::ifstream in(QVL_TEST_DATA_DIR "/tiny-qwen3vl/model.safetensors", std::ios::binary);
    std::string head(1 << 20, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    ASSERT_TRUE(in.good());
    ScratchDir dir;
    const auto path = dir.write("cut.safetensors", head);
    const auto file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.status().code(), ErrorCode::kCorruptFile);
    EXPECT_NE(file.status().message().find("run past the data section of"), std::string::npos)
        << file.status().message();
}

TEST(SafetensorsFile, MissingFileIsNotFound) {
    ScratchDir dir;
    const auto file = SafetensorsFile::open(dir.path() / "nope.safetensors");
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.status().code(), ErrorCode::kNotFound);
}

std::vector<std::byte> as_bytes(const void* p, std::size_t n) {
    std::vector<std::byte> v(n);
    std::memcpy(v.data(), p, n);
    return v;
}

TEST(SafetensorsFile, WriterRoundTripIsZeroCopy) {
    const std::vector<float> f32 = {1.0f, -2.5f, 3.25f, 0.0f, 7.0f, 1e-3f};
    const std::vector<std::uint16_t> bf16 = {
        base::f32_to_bf16(1.5f).bits, base::f32_to_bf16(-0.75f).bits, base::f32_to_bf16(3.0f).bits};
    const std::vector<std::uint16_t> f16 = {0x3c00, 0xc000};  // 1.0, -2.0
    const auto f32_bytes = as_bytes(f32.data(), f32.size() * 4);
    const auto bf16_bytes = as_bytes(bf16.data(), bf16.size() * 2);
    const auto f16_bytes = as_bytes(f16.data(), f16.size() * 2);
    const std::vector<TensorToWrite> tensors = {
        {"a.weight", DType::kF32, {2, 3}, f32_bytes},
        {"b.bias", DType::kBF16, {3}, bf16_bytes},
        {"c \"quoted\"", DType::kF16, {1, 2}, f16_bytes},
        {"empty", DType::kF32, {0, 5}, {}},
    };
    ScratchDir dir;
    const auto path = dir.path() / "good.safetensors";
    ASSERT_TRUE(write_safetensors(path, tensors).ok());

    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status().message();
    ASSERT_EQ(file->tensors().size(), 4u);
    EXPECT_EQ(file->path(), path);
    const TensorInfo* a = file->find("a.weight");
    const TensorInfo* b = file->find("b.bias");
    const TensorInfo* c = file->find("c \"quoted\"");
    ASSERT_TRUE(a != nullptr && b != nullptr && c != nullptr);
    EXPECT_EQ(file->find("missing"), nullptr);
    EXPECT_EQ(a->dtype, DType::kF32);
    EXPECT_EQ(a->shape, (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(a->n_bytes, 24u);
    EXPECT_EQ(b->dtype, DType::kBF16);
    EXPECT_EQ(c->dtype, DType::kF16);
    EXPECT_EQ(file->find("empty")->n_bytes, 0u);
    EXPECT_EQ(std::memcmp(a->data, f32.data(), 24), 0);
    EXPECT_EQ(std::memcmp(b->data, bf16.data(), 6), 0);
    EXPECT_EQ(std::memcmp(c->data, f16.data(), 4), 0);
    // Views sit back to back in one mapping, exactly where the header put them.
    EXPECT_EQ(b->data - a->data, 24);
    EXPECT_EQ(c->data - b->data, 6);
    // The header is padded so the data section starts 8-byte aligned within the file.
    const std::byte* start = a->data;
    const std::uint64_t file_size = std::filesystem::file_size(path);
    EXPECT_EQ((file_size - 24 - 6 - 4) % 8, 0u);
    EXPECT_EQ(file->size_bytes(), file_size);
    EXPECT_NE(start, f32_bytes.data());

    // Moving the file object keeps the views.
    SafetensorsFile moved = std::move(file.value());
    EXPECT_EQ(moved.find("a.weight")->data, start);
}

// Names are JSON strings in the header: quotes, backslashes, control characters and non-ASCII
// letters are escaped as needed and come back as they were, streamed or written whole.
TEST(SafetensorsWriter, NamesNeedingEscapesRoundTrip) {
    const std::vector<std::string> names = {"say \"hi\"", "back\\slash",
                                            std::string("ctl\x01\n\t", 6),
                                            "caf\xc3\xa9.\xe5\x90\x8d", "plain.weight"};
    const std::vector<float> values = {1.0f, 2.0f};
    const auto bytes = as_bytes(values.data(), values.size() * 4);
    std::vector<TensorToWrite> tensors;
    std::vector<TensorSpec> specs;
    for (const std::string& name : names) {
        tensors.push_back({name, DType::kF32, {2}, bytes});
        specs.push_back({name, DType::kF32, {2}});
    }
    ScratchDir dir;
    ASSERT_TRUE(write_safetensors(dir.path() / "whole.safetensors", tensors).ok());
    auto writer = SafetensorsWriter::create(dir.path() / "streamed.safetensors", specs);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    for (std::size_t i = 0; i < names.size(); ++i) ASSERT_TRUE(writer->append(bytes).ok());
    ASSERT_TRUE(writer->finish().ok());
    for (const char* file : {"whole.safetensors", "streamed.safetensors"}) {
        SCOPED_TRACE(file);
        auto opened = SafetensorsFile::open(dir.path() / file);
        ASSERT_TRUE(opened.ok()) << opened.status().message();
        ASSERT_EQ(opened->tensors().size(), names.size());
        for (const std::string& name : names) {
            const TensorInfo* t = opened->find(name);
            ASSERT_NE(t, nullptr) << name;
            EXPECT_EQ(std::memcmp(t->data, values.data(), 8), 0) << name;
        }
    }
}

TEST(SafetensorsFile, MetadataIsIgnored) {
    ScratchDir dir;
    const std::string header = R"({"__metadata__":{"format":"pt","nested":{"x":[1,2]}},)"
                               R"("w":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}   )";
    const auto path = dir.write("meta.safetensors", file_bytes(header, 4));
    const auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status().message();
    EXPECT_EQ(file->tensors().size(), 1u);
    EXPECT_EQ(file->find("__metadata__"), nullptr);
}

TEST(SafetensorsFile, OpensTinyCheckpoint) {
    const auto file = SafetensorsFile::open(QVL_TEST_DATA_DIR "/tiny-qwen3vl/model.safetensors");
    ASSERT_TRUE(file.ok()) << file.status().message();
    EXPECT_EQ(file->tensors().size(), 121u);
    const TensorInfo* embed = file->find("model.language_model.embed_tokens.weight");
    ASSERT_NE(embed, nullptr);
    EXPECT_EQ(embed->dtype, DType::kBF16);
    EXPECT_EQ(embed->shape, (std::vector<std::int64_t>{151936, 64}));
    EXPECT_EQ(embed->n_bytes, 151936u * 64 * 2);
}

TEST(SafetensorsWriter, RejectsBadInput) {
    ScratchDir dir;
    const std::vector<std::byte> four(4);
    const std::vector<TensorToWrite> wrong_size = {{"a", DType::kF32, {2}, four}};
    const base::Status s1 = write_safetensors(dir.path() / "a.safetensors", wrong_size);
    EXPECT_EQ(s1.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s1.message().find("F32 [2] needs 8 bytes, 4 given"), std::string::npos)
        << s1.message();
    const std::vector<TensorToWrite> dup = {{"a", DType::kF32, {1}, four},
                                            {"a", DType::kF32, {1}, four}};
    const base::Status s2 = write_safetensors(dir.path() / "b.safetensors", dup);
    EXPECT_EQ(s2.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s2.message().find("tensor 'a' given twice"), std::string::npos) << s2.message();

    const std::vector<TensorSpec> specs = {{"x", DType::kBF16, {3}}};
    auto writer = SafetensorsWriter::create(dir.path() / "c.safetensors", specs);
    ASSERT_TRUE(writer.ok());
    EXPECT_EQ(writer->data_bytes_expected(), 6u);
    EXPECT_TRUE(writer->append(four).ok());
    EXPECT_EQ(writer->append(four).code(), ErrorCode::kInvalidArgument);
    const base::Status early = writer->finish();
    EXPECT_EQ(early.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(early.message().find("4 data bytes written, the header announced 6"),
              std::string::npos)
        << early.message();
}

TEST(SafetensorsWriter, StreamsInChunks) {
    ScratchDir dir;
    std::vector<std::uint16_t> values(1000);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::uint16_t(i * 7);
    const std::vector<TensorSpec> specs = {{"x", DType::kBF16, {10, 60}},
                                           {"y", DType::kBF16, {400}}};
    auto writer = SafetensorsWriter::create(dir.path() / "s.safetensors", specs);
    ASSERT_TRUE(writer.ok());
    const auto bytes = std::as_bytes(std::span(values));
    for (std::size_t off = 0; off < bytes.size(); off += 333) {
        ASSERT_TRUE(
            writer->append(bytes.subspan(off, std::min<std::size_t>(333, bytes.size() - off)))
                .ok());
    }
    ASSERT_TRUE(writer->finish().ok());
    const auto file = SafetensorsFile::open(dir.path() / "s.safetensors");
    ASSERT_TRUE(file.ok()) << file.status().message();
    EXPECT_EQ(std::memcmp(file->find("y")->data, values.data() + 600, 800), 0);
}

// A two-shard folder written with the writer, plus an index.
struct ShardedFolder {
    ScratchDir dir;
    std::vector<float> a = {1, 2, 3, 4};
    std::vector<float> b = {5, 6};

    void write_shards() {
        const std::vector<TensorToWrite> s1 = {
            {"a", DType::kF32, {4}, std::as_bytes(std::span(a))}};
        const std::vector<TensorToWrite> s2 = {
            {"b", DType::kF32, {2}, std::as_bytes(std::span(b))}};
        ASSERT_TRUE(write_safetensors(dir.path() / "model-00001-of-00002.safetensors", s1).ok());
        ASSERT_TRUE(write_safetensors(dir.path() / "model-00002-of-00002.safetensors", s2).ok());
    }
    void write_index(const std::string& weight_map) {
        dir.write("model.safetensors.index.json",
                  R"({"metadata":{"total_size":24},"weight_map":)" + weight_map + "}");
    }
};

TEST(TensorStore, OpensShardedFolder) {
    ShardedFolder f;
    f.write_shards();
    f.write_index(R"({"a":"model-00001-of-00002.safetensors",)"
                  R"("b":"model-00002-of-00002.safetensors"})");
    const auto store = TensorStore::open_dir(f.dir.path());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_NE(store->find("a"), nullptr);
    ASSERT_NE(store->find("b"), nullptr);
    EXPECT_EQ(store->find("c"), nullptr);
    EXPECT_EQ(reinterpret_cast<const float*>(store->find("b")->data)[1], 6.0f);
    EXPECT_EQ(store->files().size(), 2u);
    EXPECT_EQ(store->file_of("b")->filename(), "model-00002-of-00002.safetensors");
    EXPECT_EQ(store->total_bytes(),
              std::filesystem::file_size(f.dir.path() / "model-00001-of-00002.safetensors") +
                  std::filesystem::file_size(f.dir.path() / "model-00002-of-00002.safetensors"));
}

TEST(TensorStore, ShardedFailures) {
    struct Case {
        std::string weight_map;
        ErrorCode code;
        std::string fragment;
    };
    const std::vector<Case> cases = {
        {R"({"a":"model-00001-of-00002.safetensors","b":"model-00003-of-00003.safetensors"})",
         ErrorCode::kNotFound,
         "shard 'model-00003-of-00003.safetensors' (holding tensor 'b') does not exist"},
        {R"({"a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors"})",
         ErrorCode::kNotFound,
         "tensor 'b' is mapped to shard 'model-00001-of-00002.safetensors', which does not "
         "contain it"},
        {R"({"a":"../model-00001-of-00002.safetensors"})", ErrorCode::kCorruptFile,
         "which is not a file name in the model folder"},
        {R"({"a":7})", ErrorCode::kCorruptFile, "weight_map entry for 'a' is a number"},
        {R"([1])", ErrorCode::kCorruptFile, "missing 'weight_map' object"},
    };
    for (const Case& c : cases) {
        ShardedFolder f;
        f.write_shards();
        f.write_index(c.weight_map);
        const auto store = TensorStore::open_dir(f.dir.path());
        ASSERT_FALSE(store.ok()) << c.weight_map;
        EXPECT_EQ(store.status().code(), c.code) << store.status().message();
        EXPECT_NE(store.status().message().find(c.fragment), std::string::npos)
            << store.status().message();
    }
}

TEST(TensorStore, DuplicateAcrossShardsIsRefused) {
    ShardedFolder f;
    f.write_shards();
    const std::vector<TensorToWrite> again = {
        {"a", DType::kF32, {4}, std::as_bytes(std::span(f.a))}};
    ASSERT_TRUE(write_safetensors(f.dir.path() / "model-00002-of-00002.safetensors", again).ok());
    f.write_index(R"({"a":"model-00001-of-00002.safetensors",)"
                  R"("c":"model-00002-of-00002.safetensors"})");
    const auto store = TensorStore::open_dir(f.dir.path());
    ASSERT_FALSE(store.ok());
    // 'c' is not in shard 2; the index check comes first.
    EXPECT_EQ(store.status().code(), ErrorCode::kNotFound);

    f.write_index(R"({"a":"model-00001-of-00002.safetensors",)"
                  R"("x":"model-00002-of-00002.safetensors"})");
    const std::vector<TensorToWrite> both = {
        {"a", DType::kF32, {4}, std::as_bytes(std::span(f.a))},
        {"x", DType::kF32, {2}, std::as_bytes(std::span(f.b))}};
    ASSERT_TRUE(write_safetensors(f.dir.path() / "model-00002-of-00002.safetensors", both).ok());
    const auto store2 = TensorStore::open_dir(f.dir.path());
    ASSERT_FALSE(store2.ok());
    EXPECT_EQ(store2.status().code(), ErrorCode::kCorruptFile);
    EXPECT_NE(store2.status().message().find("tensor 'a' appears in both"), std::string::npos)
        << store2.status().message();
}

TEST(TensorStore, SingleFileAndMissingFolder) {
    const auto store = TensorStore::open_dir(QVL_TEST_DATA_DIR "/tiny-qwen3vl");
    ASSERT_TRUE(store.ok()) << store.status().message();
    EXPECT_NE(store->find("model.visual.pos_embed.weight"), nullptr);
    EXPECT_EQ(store->total_bytes(), 20128616u);

    ScratchDir dir;
    const auto empty = TensorStore::open_dir(dir.path());
    ASSERT_FALSE(empty.ok());
    EXPECT_EQ(empty.status().code(), ErrorCode::kNotFound);
    EXPECT_NE(empty.status().message().find("neither model.safetensors nor"), std::string::npos);
    const auto missing = TensorStore::open_dir(dir.path() / "no_such_dir");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

// Mutates a good file many times (byte flips, digit changes in the header, truncation, a lying
// length prefix). Every open must either fail with a Status or give views that lie inside the
// file and match their shapes; reading every viewed byte must not fault.
TEST(SafetensorsFile, RandomMutationsNeverCrash) {
    std::vector<std::uint16_t> values(64);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::uint16_t(i * 977);
    const auto bytes = std::as_bytes(std::span(values));
    const std::vector<TensorToWrite> tensors = {
        {"a", DType::kBF16, {4, 4}, bytes.subspan(0, 32)},
        {"b", DType::kF32, {3, 2}, bytes.subspan(32, 24)},
        {"c", DType::kF16, {20}, bytes.subspan(56, 40)},
    };
    ScratchDir dir;
    const auto good_path = dir.path() / "good.safetensors";
    ASSERT_TRUE(write_safetensors(good_path, tensors).ok());
    std::ifstream in(good_path, std::ios::binary);
    const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t header_end =
        8 + std::size_t(std::uint8_t(good[0])) + 256 * std::size_t(std::uint8_t(good[1]));

    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    const auto next = [&state](std::uint64_t n) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state % n;
    };
    int opened = 0;
    for (int iter = 0; iter < 1500; ++iter) {
        std::string m = good;
        switch (next(4)) {
            case 0:
                m[next(m.size())] = char(next(256));
                break;
            case 1: {
                // Replace a digit in the header by another digit (or a minus sign).
                for (int tries = 0; tries < 50; ++tries) {
                    const std::size_t at = 8 + next(header_end - 8);
                    if (m[at] >= '0' && m[at] <= '9') {
                        m[at] = next(11) == 10 ? '-' : char('0' + next(10));
                        break;
                    }
                }
                break;
            }
            case 2:
                m.resize(next(m.size()));
                break;
            default: {
                const std::uint64_t len = header_end - 8 + next(17) - 8;
                for (int i = 0; i < 8; ++i) m[std::size_t(i)] = char((len >> (8 * i)) & 0xff);
                break;
            }
        }
        const auto path = dir.write("m.safetensors", m);
        const auto file = SafetensorsFile::open(path);
        if (!file.ok()) {
            EXPECT_FALSE(file.status().message().empty());
            continue;
        }
        ++opened;
        for (const TensorInfo& t : file->tensors()) {
            std::uint64_t n = dtype_size(t.dtype);
            for (const std::int64_t d : t.shape) n *= std::uint64_t(d);
            ASSERT_EQ(n, t.n_bytes) << t.name;
            unsigned sum = 0;
            for (std::uint64_t i = 0; i < t.n_bytes; ++i)
                sum += std::to_integer<unsigned>(t.data[i]);
            asm volatile("" : : "r"(sum));  // keeps the reads of the viewed bytes
        }
    }
    // Some mutations (flips inside tensor data, harmless digit swaps) keep the file valid.
    EXPECT_GT(opened, 0);
}

}  // namespace
}  // namespace qvl::io
