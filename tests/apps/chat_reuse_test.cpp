// Chat mode on the engine's one slot: every answer equals `qvl-run --messages` of the whole
// conversation so far (greedy, f32), while each follow-up turn prefills only what its prompt adds
// to the cached one (the -v per-turn line reports the reused tokens), and /clear drops the cache.
// Runs the real binary on the tiny checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "io/json_write.h"
#include "support/run_program.h"
#include "support/scratch_dir.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;
const fs::path kTiny = fs::path(QVL_TEST_DATA_DIR) / "tiny-qwen3vl";
const fs::path kPng = fs::path(QVL_TEST_DATA_DIR) / "golden" / "images" / "img_96x64.png";

// qvl-run in f32 precision (so a warm answer must equal a cold one exactly) with args and
// stdin from `stdin_path` (empty: /dev/null); stderr is kept.
testing::ProgramRun run_qvl(const fs::path& dir, const std::vector<std::string>& args,
                            const std::string& stdin_path = "") {
    return testing::run_program(
        QVL_RUN_PATH, args,
        {.env = "QVL_PRECISION=f32", .stdin_file = stdin_path, .stderr_file = dir / "stderr.txt"});
}

struct Turn {
    int prompt_tokens = -1, reused = -1;
};

// The -v lines "turn N: P prompt tokens, R reused from the cache, ...", in order. (Parsed by
// hand: std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers.)
std::vector<Turn> turns_of(const std::string& err) {
    std::vector<Turn> turns;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) {
        const std::size_t at = line.find("turn ");
        if (at == std::string::npos) continue;
        int n = 0;
        Turn t;
        if (std::sscanf(line.c_str() + at, "turn %d: %d prompt tokens, %d reused from the cache",
                        &n, &t.prompt_tokens, &t.reused) == 3) {
            turns.push_back(t);
        }
    }
    return turns;
}

const std::vector<std::string> kCommon = {"-m", kTiny.string(), "-n", "6", "--temp", "0"};
const std::vector<std::string> kChat = {"--interactive", "-v", "-s", "Be brief."};

// The answer --messages gives for `messages` (a JSON array's items), and its prompt size.
struct Cold {
    std::string text;
    int prompt_tokens = -1;
};
Cold cold_answer(const fs::path& dir, const std::string& messages) {
    const fs::path file = dir / "messages.json";
    std::ofstream(file, std::ios::binary) << "[" << messages << "]";
    std::vector<std::string> args = kCommon;
    args.insert(args.end(), {"--json", "--messages", file.string()});
    const testing::ProgramRun r = run_qvl(dir, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    base::Result<io::JsonValue> json = io::parse_json(r.out, "--json report");
    if (!json.ok()) {
        ADD_FAILURE() << json.status().message();
        return {};
    }
    return {json.value().find("text")->as_string(),
            int(json.value().find("prompt_tokens")->items().size())};
}

TEST(ChatReuse, ThreeTurnsEqualColdRunsAndFollowUpsPrefillOnlyTheSuffix) {
    testing::ScratchDir dir;
    const std::vector<std::string> questions = {"What is this?", "And the colour?",
                                                "Say it again."};
    {
        std::ofstream turns(dir.path() / "turns.txt", std::ios::binary);
        turns << "/image " << kPng.string() << "\n";
        for (const std::string& q : questions) turns << q << "\n";
    }
    std::vector<std::string> args = kCommon;
    args.insert(args.end(), kChat.begin(), kChat.end());
    const testing::ProgramRun chat = run_qvl(dir.path(), args, (dir.path() / "turns.txt").string());
    ASSERT_EQ(chat.exit_code, 0) << chat.err;

    // The same conversation, cold, one --messages run per turn.
    std::string messages = "{\"role\": \"system\", \"content\": \"Be brief.\"}";
    std::string expected;
    std::vector<Cold> cold;
    for (std::size_t i = 0; i < questions.size(); ++i) {
        const std::string text =
            "{\"type\": \"text\", \"text\": " + io::json_quote(questions[i]) + "}";
        messages += ", {\"role\": \"user\", \"content\": [";
        if (i == 0)
            messages += "{\"type\": \"image\", \"image\": " + io::json_quote(kPng.string()) + "}, ";
        messages += text + "]}";
        cold.push_back(cold_answer(dir.path(), messages));
        expected += cold.back().text + "\n\n";
        messages +=
            ", {\"role\": \"assistant\", \"content\": " + io::json_quote(cold.back().text) + "}";
    }
    // Exact in f32 only while a GEMM / attention row does not depend on how many rows run with
    // it (a warm follow-up prefills a few rows, the cold run all of them).
    EXPECT_EQ(chat.out, expected);

    const std::vector<Turn> turns = turns_of(chat.err);
    ASSERT_EQ(turns.size(), questions.size()) << chat.err;
    EXPECT_EQ(turns[0].reused, 0);
    for (std::size_t i = 0; i < turns.size(); ++i) {
        EXPECT_EQ(turns[i].prompt_tokens, cold[i].prompt_tokens) << "turn " << i + 1;
    }
    // A follow-up reuses at least the whole previous prompt (its answer too, up to the last
    // token, which was never decoded) and prefills at least its new user turn.
    for (std::size_t i = 1; i < turns.size(); ++i) {
        EXPECT_GE(turns[i].reused, turns[i - 1].prompt_tokens) << "turn " << i + 1;
        EXPECT_LT(turns[i].reused, turns[i].prompt_tokens) << "turn " << i + 1;
    }
}

TEST(ChatReuse, ClearDropsTheCachedConversation) {
    testing::ScratchDir dir;
    std::ofstream(dir.path() / "turns.txt", std::ios::binary)
        << "Hello\nHello again\n/clear\nHello\n";
    std::vector<std::string> args = kCommon;
    args.insert(args.end(), kChat.begin(), kChat.end());
    const testing::ProgramRun chat = run_qvl(dir.path(), args, (dir.path() / "turns.txt").string());
    ASSERT_EQ(chat.exit_code, 0) << chat.err;
    const std::vector<Turn> turns = turns_of(chat.err);
    ASSERT_EQ(turns.size(), 3u) << chat.err;
    EXPECT_GT(turns[1].reused, 0);
    // After /clear nothing is reused, not even the system prompt the new conversation shares.
    EXPECT_EQ(turns[2].reused, 0);
    EXPECT_EQ(turns[2].prompt_tokens, turns[0].prompt_tokens);
}

}  // namespace
}  // namespace qvl
