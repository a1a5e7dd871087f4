// Tokenizer tests: the 224 reference cases (ids from an independent implementation of the real
// Qwen tokenizer), round trips, streaming decode, invalid UTF-8, long inputs, load errors.
#include "text/tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <utf8proc.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "io/json.h"
#include "text/bpe.h"
#include "text/utf8.h"

namespace qvl::text {
namespace {

const std::filesystem::path kModelDir = std::filesystem::path(QVL_TEST_DATA_DIR) / "tiny-qwen3vl";

const Tokenizer& tok() {
    static const Tokenizer* t = [] {
        auto r = Tokenizer::load(kModelDir);
        if (!r.ok()) {
            ADD_FAILURE() << r.status().message();
            std::abort();
        }
        return new Tokenizer(std::move(r).value());
    }();
    return *t;
}

struct Case {
    std::string text;
    std::vector<std::int32_t> ids;
};

std::vector<Case> load_cases() {
    const auto path = std::filesystem::path(QVL_TEST_DATA_DIR) / "tokenizer" / "cases.jsonl";
    std::ifstream in(path);
    std::vector<Case> cases;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        auto j = io::parse_json(line, path.string());
        EXPECT_TRUE(j.ok()) << j.status().message();
        if (!j.ok()) continue;
        Case c;
        c.text = j->find("text")->as_string();
        for (const io::JsonValue& v : j->find("ids")->items()) c.ids.push_back(int(v.as_int()));
        cases.push_back(std::move(c));
    }
    return cases;
}

std::string nfc(const std::string& s) {
    utf8proc_uint8_t* out = nullptr;
    const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                utf8proc_ssize_t(s.size()), &out,
                                utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    EXPECT_GE(n, 0);
    std::string r(reinterpret_cast<const char*>(out), std::size_t(n < 0 ? 0 : n));
    std::free(out);
    return r;
}

std::string stream_decode(const std::vector<std::int32_t>& ids, bool skip_special,
                          std::vector<std::string>* pieces = nullptr) {
    StreamDecoder d(tok(), skip_special);
    std::string all;
    for (const std::int32_t id : ids) {
        const std::string_view s = d.push(id);
        if (pieces) pieces->emplace_back(s);
        all += s;
    }
    all += d.finish();
    return all;
}

std::int32_t byte_token(unsigned char b) {
    const std::string s(1, char(b));
    auto r = tok().encode(s);
    if (b < 0x80 && r.ok() && r->size() == 1) return (*r)[0];
    // Non-ASCII single bytes are not valid text: find them by their byte-level spelling.
    for (std::int32_t id = 0; id < tok().vocab_size(); ++id) {
        if (tok().token_bytes(id) == s) return id;
    }
    return -1;
}

TEST(Tokenizer, LoadsTheQwenTables) {
    EXPECT_EQ(tok().vocab_size(), 151669);
    EXPECT_EQ(tok().token_id("<|endoftext|>"), 151643);
    EXPECT_EQ(tok().token_id("<|im_start|>"), 151644);
    EXPECT_EQ(tok().token_id("<|im_end|>"), 151645);
    EXPECT_EQ(tok().token_id("<|image_pad|>"), 151655);
    EXPECT_EQ(tok().token_id("</think>"), 151668);
    EXPECT_EQ(tok().token_id("Ġthe"), 279);  // byte-level spelling of " the"
    EXPECT_EQ(tok().token_id(" the"), -1);
    EXPECT_EQ(tok().token_id("<|no_such_token|>"), -1);
    EXPECT_TRUE(tok().is_special(151643));
    EXPECT_TRUE(tok().is_special(151655));
    EXPECT_FALSE(tok().is_special(151657));  // <tool_call> is added but not special
    EXPECT_FALSE(tok().is_special(279));
    EXPECT_FALSE(tok().is_special(-1));
    EXPECT_FALSE(tok().is_special(151935));
    EXPECT_EQ(tok().token_bytes(279), " the");
    EXPECT_EQ(tok().token_bytes(151669), "");
}

TEST(Tokenizer, EncodesEveryReferenceCaseExactly) {
    const std::vector<Case> cases = load_cases();
    ASSERT_EQ(cases.size(), 224u);
    int failures = 0;
    for (const Case& c : cases) {
        auto ids = tok().encode(c.text);
        ASSERT_TRUE(ids.ok()) << ids.status().message();
        if (*ids != c.ids) {
            ++failures;
            ADD_FAILURE() << "text: " << c.text << "\nexpected " << testing::PrintToString(c.ids)
                          << "\n     got " << testing::PrintToString(*ids);
        }
    }
    EXPECT_EQ(failures, 0);
}

TEST(Tokenizer, DecodeOfEncodeIsTheNfcText) {
    for (const Case& c : load_cases()) {
        auto ids = tok().encode(c.text);
        ASSERT_TRUE(ids.ok());
        EXPECT_EQ(tok().decode(*ids, /*skip_special=*/false), nfc(c.text)) << c.text;
        EXPECT_EQ(stream_decode(*ids, false), tok().decode(*ids, false)) << c.text;
        EXPECT_EQ(stream_decode(*ids, true), tok().decode(*ids, true)) << c.text;
    }
    // NFC happens: a decomposed e + U+0301 comes back composed.
    auto ids = tok().encode("e\xCC\x81");
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(tok().decode(*ids), "\xC3\xA9");
}

TEST(Tokenizer, AddedTokensAreMatchedAsWholeStrings) {
    auto ids = tok().encode("<|im_start|>user\nhi<|im_end|>");
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, (std::vector<std::int32_t>{151644, 872, 198, 6023, 151645}));
    ids = tok().encode("<|im_star|>");
    ASSERT_TRUE(ids.ok());
    EXPECT_GT(ids->size(), 1u);
    for (const std::int32_t id : *ids) EXPECT_LT(id, 151643);
    EXPECT_EQ(tok().decode(*ids), "<|im_star|>");
}

TEST(Tokenizer, DecodeSkipsSpecialTokensOnlyWhenAsked) {
    const std::vector<std::int32_t> ids = {151644, 872, 151657, 151645, 198};
    EXPECT_EQ(tok().decode(ids, true), "user<tool_call>\n");
    EXPECT_EQ(tok().decode(ids, false), "<|im_start|>user<tool_call><|im_end|>\n");
    // Ids beyond the tokenizer (the model's padded vocab) and negative ids decode to nothing.
    const std::vector<std::int32_t> odd = {151700, 872, -5, 151935};
    EXPECT_EQ(tok().decode(odd), "user");
    EXPECT_EQ(stream_decode(odd, true), "user");
}

TEST(Tokenizer, StreamingHoldsBackPartialCharacters) {
    const std::string euro = "\xE2\x82\xAC";  // U+20AC as three single-byte tokens
    const std::vector<std::int32_t> ids = {byte_token(0xE2), byte_token(0x82), byte_token(0xAC),
                                           byte_token('x')};
    for (const std::int32_t id : ids) ASSERT_GE(id, 0);
    std::vector<std::string> pieces;
    EXPECT_EQ(stream_decode(ids, true, &pieces), euro + "x");
    EXPECT_EQ(pieces, (std::vector<std::string>{"", "", euro, "x"}));

    // Real text whose emoji are split over byte-level tokens.
    const std::string text = "emoji 😀 and 🦩𓀀, 中文字 龘 𝔘𝔫𝔦 Привет";
    auto enc = tok().encode(text);
    ASSERT_TRUE(enc.ok());
    pieces.clear();
    EXPECT_EQ(stream_decode(*enc, true, &pieces), text);
    int held = 0;
    for (const std::string& p : pieces) {
        held += p.empty() ? 1 : 0;
        EXPECT_EQ(tok().decode(tok().encode(p).value()), p) << "a piece is not whole UTF-8";
    }
    EXPECT_GT(held, 0) << "expected at least one token that ends inside a character";
}

TEST(Tokenizer, StreamingReusesItsBuffer) {
    // No allocation per token once warm: after one pass the output buffer keeps its address.
    const auto ids =
        tok().encode("The quick brown fox 中文字 jumps 🦩 over the lazy dog.").value();
    StreamDecoder d(tok());
    for (const std::int32_t id : ids) (void)d.push(id);
    const char* buffer = nullptr;
    for (int round = 0; round < 3; ++round) {
        for (const std::int32_t id : ids) {
            const std::string_view s = d.push(id);
            if (s.empty()) continue;
            if (buffer == nullptr) buffer = s.data();
            EXPECT_EQ(s.data(), buffer);
        }
    }
}

TEST(Tokenizer, InvalidUtf8IsDeterministic) {
    struct Bad {
        std::string text;
        std::size_t offset;
    };
    const Bad bad[] = {{"ab\xFF"
                        "cd",
                        2},
                       {"\x80", 0},
                       {"ok \xC0\xAF", 3},
                       {"x\xED\xA0\x80", 1},  // surrogate
                       {"end \xE2\x82", 4},
                       {"\xF4\x90\x80\x80", 0},
                       {"\xF0\x9F\x98", 0}};
    for (const Bad& b : bad) {
        const auto r = tok().encode(b.text);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.status().code(), base::ErrorCode::kInvalidArgument);
        EXPECT_NE(r.status().message().find("byte offset " + std::to_string(b.offset)),
                  std::string::npos)
            << r.status().message();
    }
    // Byte tokens that do not form UTF-8 decode to U+FFFD per maximal ill-formed subpart.
    const std::string fffd = "\xEF\xBF\xBD";
    const std::vector<std::int32_t> ids = {byte_token(0xE2), byte_token(0x82), byte_token('A'),
                                           byte_token(0xFF), byte_token(0xE2)};
    EXPECT_EQ(tok().decode(ids), fffd + "A" + fffd + fffd);
    EXPECT_EQ(stream_decode(ids, true), fffd + "A" + fffd + fffd);
}

// Long inputs and long runs round-trip. No clock here: the work bound of a long pre-token is
// bpe_test's (LongPiecesTakeTheHeapPath), the speed bench/tokenizer_bench.cpp's
// (tokenizer/encode/letters_100KiB, mixed_1MiB, runs).
TEST(Tokenizer, LongInputsRoundTrip) {
    const std::string letters(100 * 1024, 'a');
    auto ids = tok().encode(letters);
    ASSERT_TRUE(ids.ok());
    EXPECT_LT(ids->size(), letters.size() / 4);
    EXPECT_EQ(tok().decode(*ids), letters);

    std::string mixed;
    const std::vector<Case> cases = load_cases();
    std::mt19937 rng(7);
    while (mixed.size() < (1u << 20)) mixed += cases[rng() % cases.size()].text + " ";
    ids = tok().encode(mixed);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(tok().decode(*ids, false), nfc(mixed));

    for (const std::string& run : {std::string(50000, ' '), std::string(50000, '\n'),
                                   std::string(30000, '!'), std::string(20000, '7')}) {
        ids = tok().encode(run);
        ASSERT_TRUE(ids.ok()) << ids.status().message();
        EXPECT_EQ(tok().decode(*ids), run);
    }
}

TEST(Tokenizer, RandomUnicodeRoundTripsThroughNfc) {
    // Code points from ranges that exercise NFC (combining marks, Hangul jamo), the regex
    // classes (letters, digits, spaces of several kinds) and 4-byte sequences.
    const std::pair<char32_t, char32_t> ranges[] = {
        {0x20, 0x7E},       {0x09, 0x0D},       {0xA0, 0x24F},    {0x300, 0x36F},
        {0x391, 0x3C9},     {0x400, 0x45F},     {0x5D0, 0x5EA},   {0x660, 0x669},
        {0x900, 0x97F},     {0x1100, 0x1175},   {0x2000, 0x200F}, {0x2028, 0x2029},
        {0x3000, 0x3003},   {0x4E00, 0x4E80},   {0xAC00, 0xAC40}, {0xFF01, 0xFF5E},
        {0x1F300, 0x1F64F}, {0x1D400, 0x1D4FF}, {0x180E, 0x180E}, {0x85, 0x85}};
    std::mt19937 rng(2024);
    for (int trial = 0; trial < 300; ++trial) {
        std::string text;
        const int len = 1 + int(rng() % 40);
        for (int i = 0; i < len; ++i) {
            const auto& r = ranges[rng() % std::size(ranges)];
            detail::append_codepoint(text, r.first + char32_t(rng() % (r.second - r.first + 1)));
        }
        auto ids = tok().encode(text);
        ASSERT_TRUE(ids.ok()) << ids.status().message();
        EXPECT_EQ(tok().decode(*ids, false), nfc(text)) << text;
        EXPECT_EQ(stream_decode(*ids, false), nfc(text)) << text;
    }
    // Arbitrary bytes: either an error naming an offset or ids that decode back exactly.
    for (int trial = 0; trial < 300; ++trial) {
        std::string bytes(1 + rng() % 24, '\0');
        for (char& c : bytes) c = char(rng() % 4 == 0 ? rng() % 256 : 'a' + rng() % 26);
        auto ids = tok().encode(bytes);
        if (ids.ok()) {
            EXPECT_EQ(tok().decode(*ids, false), nfc(bytes));
        } else {
            EXPECT_EQ(ids.status().code(), base::ErrorCode::kInvalidArgument);
        }
    }
}

TEST(Tokenizer, ConcurrentEncodesAgree) {
    const std::vector<Case> cases = load_cases();
    std::vector<std::vector<std::int32_t>> got(cases.size());
    std::thread other([&] {
        for (std::size_t i = 0; i < cases.size(); i += 2)
            got[i] = tok().encode(cases[i].text).value();
    });
    for (std::size_t i = 1; i < cases.size(); i += 2) got[i] = tok().encode(cases[i].text).value();
    other.join();
    for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(got[i], cases[i].ids) << cases[i].text;
    // A copy shares the tables and outlives the original.
    Tokenizer copy = tok();
    EXPECT_EQ(copy.encode("Hello world").value(), (std::vector<std::int32_t>{9707, 1879}));
    EXPECT_TRUE(tok().encode("").value().empty());
}

class TokenizerLoadError : public testing::Test {
  protected:
    void SetUp() override {
        // Unique per test and process: ctest runs tests in parallel processes.
        dir_ = std::filesystem::path(testing::TempDir()) /
               (std::string("qvl_tok_load_") +
                testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                std::to_string(::getpid()));
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    base::Status load_with(const std::string& tokenizer_json) {
        std::ofstream(dir_ / "tokenizer.json") << tokenizer_json;
        return Tokenizer::load(dir_).status();
    }
    std::filesystem::path dir_;
};

// A minimal tokenizer.json: the 256 byte tokens (ids 0..255, byte-level spelling), "ab" = 256,
// then `merges` and `extra` top-level members.
std::string tiny_json(const std::string& merges, const std::string& extra = "",
                      bool all_bytes = true) {
    std::string vocab;
    for (int b = 0; b < 256; ++b) {
        if (!all_bytes && b != 'a' && b != 'b') continue;
        std::string spelled;
        detail::append_codepoint(spelled, detail::byte_level_codepoint(std::uint8_t(b)));
        if (spelled == "\"" || spelled == "\\") spelled = "\\" + spelled;
        vocab += "\"" + spelled + "\": " + std::to_string(b) + ", ";
    }
    vocab += "\"ab\": 256";
    return R"({"model": {"type": "BPE", "vocab": {)" + vocab + "}, \"merges\": " + merges + "}" +
           extra + "}";
}

const std::string kPreTokenizer =
    R"(, "normalizer": {"type": "NFC"}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [)"
    R"({"type": "Split", "pattern": {"Regex": "\\p{L}+|\\s+|."}, "behavior": "Isolated"},)"
    R"( {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},)"
    R"( "decoder": {"type": "ByteLevel"})";

TEST_F(TokenizerLoadError, MissingFileIsNotFound) {
    const base::Status s = Tokenizer::load(dir_).status();
    EXPECT_EQ(s.code(), base::ErrorCode::kNotFound);
    EXPECT_NE(s.message().find("tokenizer.json"), std::string::npos);
}

TEST_F(TokenizerLoadError, BadJsonIsCorrupt) {
    const base::Status s = load_with("{\"model\": ");
    EXPECT_EQ(s.code(), base::ErrorCode::kCorruptFile);
    EXPECT_NE(s.message().find("tokenizer.json"), std::string::npos);
}

TEST_F(TokenizerLoadError, MissingByteTokensAreCorrupt) {
    const base::Status s = load_with(tiny_json("[[\"a\", \"b\"]]", kPreTokenizer, false));
    EXPECT_EQ(s.code(), base::ErrorCode::kCorruptFile);
    EXPECT_NE(s.message().find("no token for byte"), std::string::npos) << s.message();
}

TEST_F(TokenizerLoadError, AMinimalFileLoadsAndMerges) {
    std::ofstream(dir_ / "tokenizer.json") << tiny_json("[\"a b\"]", kPreTokenizer);
    auto t = Tokenizer::load(dir_);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->vocab_size(), 257);
    EXPECT_EQ(t->encode("abab a").value(), (std::vector<std::int32_t>{256, 256, ' ', 'a'}));
}

TEST_F(TokenizerLoadError, MergeOfUnknownTokensIsCorrupt) {
    const base::Status s =
        load_with(tiny_json("[[\"a\", \"b\"], [\"ab\", \"zz\"]]", kPreTokenizer));
    EXPECT_EQ(s.code(), base::ErrorCode::kCorruptFile);
    EXPECT_NE(s.message().find("model.merges[1]"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("'zz' is not in the vocab"), std::string::npos) << s.message();
}

TEST_F(TokenizerLoadError, UnknownNormalizerIsUnsupported) {
    std::string json = tiny_json("[]", kPreTokenizer);
    json.replace(json.find("\"NFC\""), 5, "\"NFKC\"");
    const base::Status s = load_with(json);
    EXPECT_EQ(s.code(), base::ErrorCode::kUnsupported);
    EXPECT_NE(s.message().find("NFKC"), std::string::npos) << s.message();
}

TEST_F(TokenizerLoadError, ABadRegexIsUnsupported) {
    std::string json = tiny_json("[]", kPreTokenizer);
    json.replace(json.find("\\\\s+"), 4, "(((");
    const base::Status s = load_with(json);
    EXPECT_EQ(s.code(), base::ErrorCode::kUnsupported);
    EXPECT_NE(s.message().find("regex"), std::string::npos) << s.message();
}

TEST_F(TokenizerLoadError, OtherModelTypesAreUnsupported) {
    const base::Status s = load_with(R"({"model": {"type": "WordPiece", "vocab": {}}})");
    EXPECT_EQ(s.code(), base::ErrorCode::kUnsupported);
    EXPECT_NE(s.message().find("WordPiece"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace qvl::text
