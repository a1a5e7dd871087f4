// --logprobs and --logit-bias end to end on the tiny model: the first token's top_logprobs are
// the log-softmax of --dump-logits (the same run's last prompt position), greedy tokens are
// their own best alternative, +100 on a token makes greedy decoding emit it, and bad values
// are usage errors naming the flag.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "bad_input_support.h"
#include "io/json.h"

namespace qvl::bad_input {
namespace {

// The float32 data of a 1-D .npy file written by --dump-logits (format 1.0).
std::vector<float> read_npy_f32(const fs::path& path) {
    const std::string bytes = read_file(path);
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return {};
    const std::size_t header = std::size_t(std::uint8_t(bytes[8])) |
                               std::size_t(std::uint8_t(bytes[9])) << 8;
    const std::size_t at = 10 + header;
    std::vector<float> out((bytes.size() - at) / 4);
    std::memcpy(out.data(), bytes.data() + at, out.size() * 4);
    return out;
}

io::JsonValue run_json(const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"-m", kTiny.string(), "-t", "1", "--temp", "0", "-n", "6",
                                  "-p", "hello hello", "--json", "--ignore-eos"};
    a.insert(a.end(), extra.begin(), extra.end());
    const RunResult r = run_qvl(a);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto json = io::parse_json(r.out, "stdout");
    EXPECT_TRUE(json.ok()) << r.out;
    return json.ok() ? std::move(json).value() : io::JsonValue();
}

TEST_F(BadInput, LogprobsAreTheLogSoftmaxOfTheLogits) {
    const fs::path npy = scratch_.path() / "logits.npy";
    const io::JsonValue out = run_json({"--logprobs", "20", "--dump-logits", npy.string()});
    const std::vector<float> logits = read_npy_f32(npy);
    ASSERT_EQ(logits.size(), 151936u);
    double mx = -INFINITY, sum = 0.0;
    for (const float v : logits) mx = std::max(mx, double(v));
    for (const float v : logits) sum += std::exp(double(v) - mx);
    const double log_z = mx + std::log(sum);

    const auto& tokens = out.find("tokens")->items();
    const auto& entries = out.find("logprobs")->items();
    ASSERT_EQ(entries.size(), tokens.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const io::JsonValue& e = entries[i];
        const auto& top = e.find("top_logprobs")->items();
        ASSERT_EQ(top.size(), 20u);
        // Greedy: the token is its own best alternative, with the same log-probability.
        EXPECT_EQ(e.find("id")->as_int(), tokens[i].as_int());
        EXPECT_EQ(top[0].find("id")->as_int(), tokens[i].as_int());
        EXPECT_EQ(top[0].find("logprob")->as_double(), e.find("logprob")->as_double());
        EXPECT_FALSE(e.find("bytes")->items().empty());
        if (i > 0) continue;
        for (const io::JsonValue& t : top) {
            const double want = double(logits[std::size_t(t.find("id")->as_int())]) - log_z;
            EXPECT_NEAR(t.find("logprob")->as_double(), want, 1e-6);
        }
    }
}

TEST_F(BadInput, LogitBiasForcesItsToken) {
    const io::JsonValue plain = run_json({});
    const std::int64_t first = plain.find("tokens")->items()[0].as_int();
    const std::int64_t forced = first == 77 ? 78 : 77;
    const io::JsonValue out =
        run_json({"--logit-bias", "5=-3", "--logit-bias", std::to_string(forced) + "=100"});
    for (const io::JsonValue& t : out.find("tokens")->items()) EXPECT_EQ(t.as_int(), forced);
    const io::JsonValue banned = run_json({"--logit-bias", std::to_string(first) + "=-100"});
    EXPECT_NE(banned.find("tokens")->items()[0].as_int(), first);
}

TEST_F(BadInput, LogprobsAndLogitBiasUsageErrors) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--logprobs", "21", "--json"}, "--logprobs: '21'"},
        {{"--logprobs", "3"}, "--logprobs needs --json"},
        {{"--logit-bias", "5"}, "--logit-bias: '5' is not ID=BIAS"},
        {{"--logit-bias", "-5=1"}, "--logit-bias: '-5=1'"},
        {{"--logit-bias", "5=100.5"}, "[-100, 100]"},
        {{"--logit-bias", "5=nan"}, "[-100, 100]"},
        {{"--logit-bias", "151936=1"}, "token id 151936 is outside the vocabulary"},
    };
    for (const auto& [extra, fragment] : cases) {
        std::vector<std::string> a = {"-m", kTiny.string(), "-p", "hi"};
        a.insert(a.end(), extra.begin(), extra.end());
        expect_refused(run_qvl(a), kUsage, fragment);
    }
}

}  // namespace
}  // namespace qvl::bad_input
