// qvl-run --batch over the golden cases at --parallel 4: every case gets the golden greedy tokens
// (f32) and exactly the text a single qvl-run prints for it (default precision); bad lines get an
// error result and the rest still run.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "support/golden.h"
#include "support/scratch_dir.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

// stdout of a shell command (stderr discarded), and its exit code.
std::string run_command(const std::string& cmd, int* code,
                        const std::string& err_path = "/dev/null") {
    std::string out;
    std::FILE* p = popen((cmd + " 2>" + err_path).c_str(), "r");
    if (p == nullptr) return out;
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

std::string read_file(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// The case.json object on one line with its image paths made absolute.
std::string case_line_json(const std::string& name) {
    const fs::path dir = test::test_data_dir() / name;
    std::string text = read_file(dir / "case.json");
    const std::string key = "\"image\": \"";
    for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
        at += key.size();
        const std::size_t end = text.find('"', at);
        const std::string abs = (dir / text.substr(at, end - at)).lexically_normal().string();
        text.replace(at, end - at, abs);
        at += abs.size();
    }
    for (char& c : text) c = (c == '\n') ? ' ' : c;
    return text;
}

struct BatchResult {
    std::string text;
    std::vector<std::int64_t> tokens;
    std::string error;
};

std::map<std::string, BatchResult> parse_output(const std::string& out) {
    std::map<std::string, BatchResult> results;
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
        auto json = io::parse_json(line, "output");
        EXPECT_TRUE(json.ok()) << line;
        if (!json.ok()) continue;
        const io::JsonValue& v = json.value();
        const io::JsonValue* id = v.find("id");
        BatchResult r;
        if (const io::JsonValue* e = v.find("error")) {
            r.error = e->as_string();
        } else {
            r.text = v.find("text")->as_string();
            for (const io::JsonValue& t : v.find("tokens")->items()) r.tokens.push_back(t.as_int());
            EXPECT_NE(v.find("timings_ms"), nullptr);
            EXPECT_NE(v.find("finish_reason"), nullptr);
        }
        results[id != nullptr && id->is_string() ? id->as_string() : "?"] = r;
    }
    return results;
}

const fs::path kTiny = test::test_data_dir() / "tiny-qwen3vl";

std::map<std::string, BatchResult> run_batch(const testing::ScratchDir& dir, const std::string& env,
                                             int* code, const std::string& flags = "",
                                             const std::string& err_path = "/dev/null",
                                             const std::string& first_line = "") {
    std::string file = first_line;
    for (const std::string& name : test::golden_case_names()) {
        file += "{\"id\": \"" + name +
                "\", \"n_predict\": 16, \"ignore_eos\": true, \"temperature\": 0, \"messages\": " +
                case_line_json(name) + "}\n";
    }
    file += "{\"id\": \"bad\", \"messages\": [{\"role\": \"robot\", \"content\": \"hi\"}]}\n";
    file += "\n";  // blank lines are skipped
    file += "{\"id\": \"truncated\", \"messages\": [\n";
    const fs::path in = dir.write("in.jsonl", file);
    const fs::path out = dir.path() / "out.jsonl";
    run_command(env + " " + QVL_RUN_PATH + " -m " + kTiny.string() + " -t 2 -c 256 --batch " +
                    in.string() + " --parallel 4 -o " + out.string() + " " + flags,
                code, err_path);
    return parse_output(read_file(out));
}

// Every golden case got its golden greedy tokens (f32 precision).
void expect_golden_tokens(const std::map<std::string, BatchResult>& results) {
    for (const std::string& name : test::golden_case_names()) {
        SCOPED_TRACE(name);
        const BatchResult& r = results.at(name);
        ASSERT_TRUE(r.error.empty()) << r.error;
        const auto golden = test::read_golden(test::test_data_dir() / name / "golden.safetensors");
        EXPECT_EQ(r.tokens, golden.at("generated_ids").as_ints());
    }
}

TEST(Batch, F32GivesTheGoldenTokens) {
    const testing::ScratchDir dir;
    int code = 0;
    const auto results = run_batch(dir, "QVL_PRECISION=f32", &code);
    EXPECT_EQ(code, 4) << "bad lines make the exit code 4";
    ASSERT_EQ(results.size(), test::golden_case_names().size() + 2);
    expect_golden_tokens(results);
    EXPECT_NE(results.at("bad").error.find("in.jsonl:"), std::string::npos)
        << results.at("bad").error;
    EXPECT_NE(results.at("?").error.find("in.jsonl:"), std::string::npos);
}

// A microsecond admission budget cuts every vision tower and prompt into pieces between the
// decode steps of the other conversations (each step then overruns it, which -v reports: the
// flag reached the engine); the answers must not change.
TEST(Batch, TinyAdmissionBudgetGivesTheGoldenTokens) {
    const testing::ScratchDir dir;
    int code = 0;
    const std::string err = (dir.path() / "err.txt").string();
    // A long answer first, so that the golden cases past the first three are admitted while it
    // streams (requests that find nobody streaming are admitted whole, back to back).
    const std::string long_answer =
        "{\"id\": \"long\", \"n_predict\": 120, \"ignore_eos\": true, \"messages\": "
        "[{\"role\": \"user\", \"content\": \"Tell a long story.\"}]}\n";
    const auto results = run_batch(dir, "QVL_PRECISION=f32", &code,
                                   "--admission-budget-ms 0.001 -v", err, long_answer);
    EXPECT_EQ(code, 4);
    EXPECT_NE(read_file(err).find("over a 0.001 ms budget"), std::string::npos) << read_file(err);
    expect_golden_tokens(results);
}

TEST(Batch, SameTextAsSingleRuns) {
    const testing::ScratchDir dir;
    int code = 0;
    const auto results = run_batch(dir, "", &code);
    for (const std::string& name : test::golden_case_names()) {
        SCOPED_TRACE(name);
        int single_code = 0;
        std::string single =
            run_command(std::string(QVL_RUN_PATH) + " -m " + kTiny.string() +
                            " -t 1 -c 256 -n 16 --ignore-eos --temp 0 --messages " +
                            (test::test_data_dir() / name / "case.json").string(),
                        &single_code);
        ASSERT_EQ(single_code, 0);
        ASSERT_FALSE(single.empty());
        single.pop_back();  // the newline after the answer
        ASSERT_TRUE(results.count(name));
        EXPECT_EQ(results.at(name).text, single);
    }
}

}  // namespace
}  // namespace qvl
