// --repeat-penalty and --presence-penalty end to end: qvl-run hands them (and the prompt ids)
// to the sampler, reports them in the --json sampling object, and they change what greedy
// decoding of the tiny model does: without them it loops on "hello hello", with a large
// repetition penalty no generated id repeats or comes from the prompt.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "bad_input_support.h"
#include "io/json.h"

namespace qvl::bad_input {
namespace {

struct Generated {
    std::vector<std::int64_t> prompt, tokens;
    io::JsonValue sampling;
};

Generated run_json(std::vector<std::string> extra) {
    std::vector<std::string> a = {"-m",     kTiny.string(), "-t", "1",  "--temp",
                                  "0",      "-n",           "24", "-p", "hello hello",
                                  "--json", "--ignore-eos"};
    a.insert(a.end(), extra.begin(), extra.end());
    const RunResult r = run_qvl(a);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Generated g;
    auto json = io::parse_json(r.out, "stdout");
    if (!json.ok()) {
        ADD_FAILURE() << json.status().message() << "\n" << r.out;
        return g;
    }
    for (const io::JsonValue& v : json->find("prompt_tokens")->items())
        g.prompt.push_back(v.as_int());
    for (const io::JsonValue& v : json->find("tokens")->items()) g.tokens.push_back(v.as_int());
    g.sampling = *json->find("sampling");
    return g;
}

// Generated ids that repeat an earlier generated id or a prompt id.
int reused_ids(const Generated& g) {
    std::set<std::int64_t> seen(g.prompt.begin(), g.prompt.end());
    int reused = 0;
    for (const std::int64_t t : g.tokens) reused += seen.insert(t).second ? 0 : 1;
    return reused;
}

TEST(PenaltyCli, RepetitionPenaltyStopsGreedyLoops) {
    const Generated plain = run_json({});
    ASSERT_EQ(plain.tokens.size(), 24u);
    EXPECT_GT(reused_ids(plain), 4) << "the tiny model no longer loops: pick another prompt";
    EXPECT_EQ(plain.sampling.find("repetition_penalty")->as_double(), 1.0);  // the model's
    EXPECT_EQ(plain.sampling.find("presence_penalty")->as_double(), 0.0);

    const Generated penalized = run_json({"--repeat-penalty", "100"});
    ASSERT_EQ(penalized.tokens.size(), 24u);
    EXPECT_EQ(reused_ids(penalized), 0);
    EXPECT_EQ(penalized.sampling.find("repetition_penalty")->as_double(), 100.0);
    // Up to the first reused id of the plain run, nothing was penalized: same tokens.
    EXPECT_EQ(penalized.tokens[0], plain.tokens[0]);
}

TEST(PenaltyCli, PresencePenaltyIsReportedAndApplied) {
    const Generated plain = run_json({});
    const Generated presence = run_json({"--presence-penalty", "2"});
    ASSERT_EQ(presence.tokens.size(), 24u);
    EXPECT_EQ(presence.sampling.find("presence_penalty")->as_double(), 2.0);
    EXPECT_NE(presence.tokens, plain.tokens);
    // Prompt ids are not penalized by presence: the first token is the plain one.
    EXPECT_EQ(presence.tokens[0], plain.tokens[0]);
}

}  // namespace
}  // namespace qvl::bad_input
