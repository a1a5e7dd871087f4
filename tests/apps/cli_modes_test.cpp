// qvl-run's stage-two modes as a user drives them: chat on stdin (--interactive), images from
// stdin and file:// URLs, --draw-boxes. Each runs the real binary on the tiny checkpoint.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/image.h"
#include "support/run_program.h"
#include "support/scratch_dir.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;
const fs::path kTiny = fs::path(QVL_TEST_DATA_DIR) / "tiny-qwen3vl";
const fs::path kPng = fs::path(QVL_TEST_DATA_DIR) / "golden" / "images" / "img_96x64.png";

using testing::shell_quote;

// Runs qvl-run with args, stdin from `stdin_path` (empty: /dev/null), stderr discarded.
testing::ProgramRun run_qvl(const std::vector<std::string>& args,
                            const std::string& stdin_path = "") {
    return testing::run_program(QVL_RUN_PATH, args, {.stdin_file = stdin_path});
}

// The "text" of a --json report (the tiny model's text has no quotes or backslashes to unescape
// in these cases; the test fails loudly if it ever does).
std::string json_text(const std::string& report) {
    const std::string key = "\"text\": \"";
    const std::size_t a = report.find(key);
    const std::size_t b = report.find("\", \"finish_reason\"");
    if (a == std::string::npos || b == std::string::npos) return "<no text in: " + report + ">";
    const std::string text = report.substr(a + key.size(), b - a - key.size());
    EXPECT_EQ(text.find('\\'), std::string::npos) << "escaped text; extend json_text";
    return text;
}

void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

TEST(CliModes, ChatAnswersEqualMessagesRunsOfTheWholeConversation) {
    testing::ScratchDir dir;
    const std::vector<std::string> common = {"-m", kTiny.string(), "-n",       "6", "--temp",
                                             "0",  "-s",           "Be brief."};
    write(dir.path() / "turns.txt",
          "/image " + kPng.string() + "\nWhat is this?\n/bogus\n\nAnd the colour?\n");
    const testing::ProgramRun chat = run_qvl(common, (dir.path() / "turns.txt").string());
    ASSERT_EQ(chat.exit_code, 0);

    // Turn 1 alone, then turn 1 + answer + turn 2, through --messages.
    const std::string sys = "{\"role\": \"system\", \"content\": \"Be brief.\"}";
    const std::string user1 =
        "{\"role\": \"user\", \"content\": [{\"type\": \"image\", "
        "\"image\": \"" +
        kPng.string() + "\"}, {\"type\": \"text\", \"text\": \"What is this?\"}]}";
    write(dir.path() / "one.json", "[" + sys + ", " + user1 + "]");
    const testing::ProgramRun one =
        run_qvl({"-m", kTiny.string(), "-n", "6", "--temp", "0", "--json", "--messages",
                 (dir.path() / "one.json").string()});
    ASSERT_EQ(one.exit_code, 0);
    const std::string answer1 = json_text(one.out);
    write(dir.path() / "two.json", "[" + sys + ", " + user1 +
                                       ", {\"role\": \"assistant\", \"content\": \"" + answer1 +
                                       "\"}, {\"role\": \"user\", \"content\": \"And the "
                                       "colour?\"}]");
    const testing::ProgramRun two =
        run_qvl({"-m", kTiny.string(), "-n", "6", "--temp", "0", "--json", "--messages",
                 (dir.path() / "two.json").string()});
    ASSERT_EQ(two.exit_code, 0);
    EXPECT_EQ(chat.out, answer1 + "\n\n" + json_text(two.out) + "\n\n");
}

// /video attaches a video to the next turn as --video attaches it to a -p turn: the answer is the
// one a --messages run with the video part gives, sampled with the same --video-fps. A missing
// path attaches nothing; a truncated clip fails its turn, named on stderr, and the chat goes on.
TEST(CliModes, ChatVideoCommandEqualsAMessagesRun) {
    testing::ScratchDir dir;
    const fs::path clip = fs::path(QVL_TEST_DATA_DIR) / "videos" / "shapes_100x62_12fps.mp4";
    const std::vector<std::string> common = {"-m", kTiny.string(), "-n", "6", "--temp",
                                             "0",  "--video-fps",  "1"};
    write(dir.path() / "turns.txt", "/video file://" + clip.string() + "\nWhat happens?\n");
    std::vector<std::string> chat_args = common;
    chat_args.push_back("--interactive");
    const testing::ProgramRun chat = run_qvl(chat_args, (dir.path() / "turns.txt").string());
    ASSERT_EQ(chat.exit_code, 0);
    write(dir.path() / "one.json",
          "[{\"role\": \"user\", \"content\": [{\"type\": \"video\", \"video\": \"" +
              clip.string() + "\"}, {\"type\": \"text\", \"text\": \"What happens?\"}]}]");
    std::vector<std::string> one_args = common;
    for (const char* a : {"--json", "--messages"}) one_args.emplace_back(a);
    one_args.push_back((dir.path() / "one.json").string());
    const testing::ProgramRun one = run_qvl(one_args);
    ASSERT_EQ(one.exit_code, 0);
    EXPECT_EQ(chat.out, json_text(one.out) + "\n\n");
    // --video gives the first turn its video, as /video does.
    std::vector<std::string> flag_args = common;
    flag_args.insert(flag_args.end(),
                     {"--interactive", "--video", clip.string(), "-p", "What happens?"});
    EXPECT_EQ(run_qvl(flag_args).out, chat.out);

    std::string truncated;
    {
        std::ifstream in(clip, std::ios::binary);
        truncated.assign(std::istreambuf_iterator<char>(in), {});
    }
    write(dir.path() / "cut.mp4", truncated.substr(0, truncated.size() / 3));
    write(dir.path() / "bad.txt", "/video /no/such/clip.mp4\nHello\n/video " +
                                      (dir.path() / "cut.mp4").string() +
                                      "\nHello\n/clear\n/video\nHello\n");
    const testing::ProgramRun bad = testing::run_program(
        QVL_RUN_PATH, {"-m", kTiny.string(), "-n", "3", "--temp", "0", "--interactive"},
        {.stdin_file = dir.path() / "bad.txt", .stderr_file = dir.path() / "err.txt"});
    ASSERT_EQ(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("/no/such/clip.mp4: cannot read the video; nothing attached"),
              std::string::npos)
        << bad.err;
    EXPECT_NE(bad.err.find("error: " + (dir.path() / "cut.mp4").string() + ": "), std::string::npos)
        << bad.err;
    EXPECT_NE(bad.err.find("/video needs a path: /video clip.mp4"), std::string::npos) << bad.err;
    // Two answered turns ("Hello" before and after the failed one), the same text twice.
    const std::size_t half = bad.out.size() / 2;
    ASSERT_GT(half, 2u);
    EXPECT_EQ(bad.out.substr(0, half), bad.out.substr(half));
}

TEST(CliModes, ClearStartsOverAndExitStops) {
    testing::ScratchDir dir;
    write(dir.path() / "turns.txt", "Hello\n/clear\nHello\n/exit\nnever asked\n");
    const testing::ProgramRun chat =
        run_qvl({"-m", kTiny.string(), "-n", "4", "--temp", "0", "--interactive"},
                (dir.path() / "turns.txt").string());
    ASSERT_EQ(chat.exit_code, 0);
    const std::size_t half = chat.out.size() / 2;
    ASSERT_GT(half, 2u);
    EXPECT_EQ(chat.out.substr(0, half), chat.out.substr(half));  // the same first turn twice
}

TEST(CliModes, ImageFromStdinAndFileUrlMatchThePath) {
    const std::vector<std::string> common = {"-m", kTiny.string(), "-p", "Describe.", "-n",
                                             "4",  "--temp",       "0",  "--json"};
    auto with = [&](const std::string& image, const std::string& in = "") {
        std::vector<std::string> args = common;
        args.insert(args.end(), {"-i", image});
        return run_qvl(args, in);
    };
    const testing::ProgramRun by_path = with(kPng.string());
    ASSERT_EQ(by_path.exit_code, 0);
    const testing::ProgramRun by_stdin = with("-", kPng.string());
    ASSERT_EQ(by_stdin.exit_code, 0);
    const testing::ProgramRun by_url = with("file://" + fs::absolute(kPng).string());
    ASSERT_EQ(by_url.exit_code, 0);
    EXPECT_EQ(json_text(by_stdin.out), json_text(by_path.out));
    EXPECT_EQ(json_text(by_url.out), json_text(by_path.out));
    EXPECT_NE(by_stdin.out.find("\"path\": \"stdin\""), std::string::npos) << by_stdin.out;
    EXPECT_EQ(with("-").exit_code, 4);  // empty stdin: no image data
    EXPECT_EQ(with("file:///no/such/image.png").exit_code, 4);
}

TEST(CliModes, DrawBoxesWritesThePictureEvenWithoutBoxes) {
    testing::ScratchDir dir;
    const fs::path out = dir.path() / "boxes.png";
    const testing::ProgramRun r =
        run_qvl({"-m", kTiny.string(), "-i", kPng.string(), "-p", "Where is it?", "-n", "2",
                 "--temp", "0", "--draw-boxes", out.string()});
    ASSERT_EQ(r.exit_code, 0);
    base::Result<io::Image> drawn = io::load_image(out, io::ImageLimits{});
    base::Result<io::Image> input = io::load_image(kPng, io::ImageLimits{});
    ASSERT_TRUE(drawn.ok()) << drawn.status().message();
    ASSERT_TRUE(input.ok());
    EXPECT_EQ(drawn.value().rgb, input.value().rgb);  // the random model draws no boxes
    EXPECT_EQ(run_qvl({"-m", kTiny.string(), "-p", "x", "--draw-boxes", out.string()}).exit_code,
              2);
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(CliModes, ProgressOnlyOnATerminal) {
    testing::ScratchDir dir;
    const std::string args = shell_quote(QVL_RUN_PATH) + " -m " + shell_quote(kTiny.string()) +
                             " -i " + shell_quote(kPng.string()) + " -p hi -n 2 --temp 0";
    const fs::path piped = dir.path() / "piped.txt";
    ASSERT_EQ(std::system((args + " >/dev/null 2>" + shell_quote(piped.string())).c_str()), 0);
    EXPECT_EQ(read_file(piped).find("vision tower"), std::string::npos);
    if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1)";
    // script(1) gives the program a pseudo-terminal: stderr is then a terminal.
    const fs::path tty = dir.path() / "tty.txt";
    ASSERT_EQ(std::system(("script -qec " + shell_quote(args + " 2>&1") + " /dev/null > " +
                           shell_quote(tty.string()) + " </dev/null")
                              .c_str()),
              0);
    EXPECT_NE(read_file(tty).find("vision tower: block 4/4"), std::string::npos) << read_file(tty);
    const testing::ProgramRun json =
        run_qvl({"-m", kTiny.string(), "-p", "hi", "-n", "1", "--json"});
    EXPECT_EQ(json.out.find("vision tower"), std::string::npos);
}

double json_number(const std::string& report, const std::string& key) {
    const std::size_t at = report.find("\"" + key + "\": ");
    if (at == std::string::npos) return -1.0;
    return std::stod(report.substr(at + key.size() + 4));
}

// The report says what ran: the kernel tier, the precision with auto resolved and the weight
// formats, in --json and in the stderr timing block.
TEST(CliModes, ReportNamesTheKernelsAndThePrecisionThatRan) {
    testing::ScratchDir dir;
    const fs::path err = dir.path() / "err.txt";
    const std::vector<std::string> args = {"-m", kTiny.string(), "-p", "hi", "-n", "1", "--json"};
    const testing::ProgramRun f32 = testing::run_program(
        QVL_RUN_PATH, args, {.env = "QVL_PRECISION=f32 QVL_ISA=scalar", .stderr_file = err});
    ASSERT_EQ(f32.exit_code, 0) << f32.err;
    EXPECT_NE(f32.out.find("\"isa\": \"scalar\", \"precision\": \"f32\""), std::string::npos)
        << f32.out;
    EXPECT_NE(f32.out.find("\"weights\": \"bf16\", \"vision_weights\": \"bf16\""),
              std::string::npos)
        << f32.out;
    EXPECT_NE(
        f32.err.find("kernels         scalar (f32 precision, bf16 weights, bf16 vision weights)"),
        std::string::npos)
        << f32.err;
    std::vector<std::string> quantized = args;
    for (const char* a : {"--weights", "q4", "--vision-weights", "q8"}) quantized.emplace_back(a);
    const testing::ProgramRun q4 =
        testing::run_program(QVL_RUN_PATH, quantized, {.stderr_file = err});
    ASSERT_EQ(q4.exit_code, 0) << q4.err;
    EXPECT_NE(q4.out.find("\"weights\": \"q4\", \"vision_weights\": \"q8\""), std::string::npos)
        << q4.out;
    EXPECT_NE(q4.err.find("q4 weights, q8 vision weights)"), std::string::npos) << q4.err;
    // Auto on the scalar tier, which has no bf16 products: f32 activations, bf16 KV cache.
    const testing::ProgramRun automatic =
        testing::run_program(QVL_RUN_PATH, args, {.env = "QVL_ISA=scalar"});
    ASSERT_EQ(automatic.exit_code, 0);
    EXPECT_NE(automatic.out.find("\"precision\": \"f32-kv-bf16\""), std::string::npos)
        << automatic.out;
}

TEST(CliModes, DryRunPredictsMemoryWithoutRunning) {
    const std::vector<std::string> args = {"-m",        kTiny.string(), "-i", kPng.string(), "-p",
                                           "Describe.", "-n",           "8",  "--temp",      "0",
                                           "--json"};
    std::vector<std::string> dry = args;
    dry.push_back("--dry-run");
    const testing::ProgramRun estimate = run_qvl(dry);
    ASSERT_EQ(estimate.exit_code, 0) << estimate.out;
    for (const char* key : {"\"memory_mb\"", "\"weights\"", "\"kv\"", "\"activations\"",
                            "\"estimate_ms\"", "\"vision\"", "\"prefill\"", "\"ttft\"",
                            "\"decode_per_token\"", "\"fits\": true", "\"tokens\": 6"}) {
        EXPECT_NE(estimate.out.find(key), std::string::npos) << key << " in " << estimate.out;
    }
    EXPECT_EQ(estimate.out.find("\"text\""), std::string::npos);  // nothing was generated
    const testing::ProgramRun real = run_qvl(args);
    ASSERT_EQ(real.exit_code, 0);
    const double predicted = json_number(estimate.out, "total");
    const double measured = json_number(real.out, "peak_rss_mb");
    ASSERT_GT(measured, 0.0) << real.out;
    EXPECT_NEAR(predicted, measured, 0.15 * measured) << estimate.out;
    // A run that cannot fit says so, with the resource exit code.
    const testing::ProgramRun too_big =
        run_qvl({"-m", kTiny.string(), "-i", kPng.string(), "-p", "Describe.", "-n", "100", "-c",
                 "64", "--json", "--dry-run"});
    EXPECT_EQ(too_big.exit_code, 5);
    EXPECT_NE(too_big.out.find("\"fits\": false"), std::string::npos) << too_big.out;
}

}  // namespace
}  // namespace qvl
