// qvl-run's command-line parser: every flag of the contract, the defaults, the ranges, the
// conflicts, and the one-line error format, tested in-process through parse_args.
#include "qvl_run/args.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/exit_codes.h"

namespace qvl::app {
namespace {

struct Parsed {
    int code = -100;
    RunOptions options;
    std::string out;
    std::string err;
};

// Runs parse_args on "qvl-run" + args, capturing what it prints.
Parsed parse(const std::vector<std::string>& args) {
    std::vector<const char*> argv = {"qvl-run"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    char* out_buf = nullptr;
    char* err_buf = nullptr;
    std::size_t out_size = 0, err_size = 0;
    std::FILE* out = open_memstream(&out_buf, &out_size);
    std::FILE* err = open_memstream(&err_buf, &err_size);
    Parsed p;
    p.code = parse_args(int(argv.size()), argv.data(), &p.options, out, err).exit_code;
    std::fclose(out);
    std::fclose(err);
    p.out.assign(out_buf, out_size);
    p.err.assign(err_buf, err_size);
    std::free(out_buf);
    std::free(err_buf);
    return p;
}

// Usage errors: exit 2, nothing on stdout, the first line "qvl-run: error: ..." containing
// `fragment`, and at most one more line, a hint.
void expect_usage_error(const std::vector<std::string>& args, const std::string& fragment) {
    SCOPED_TRACE(testing::PrintToString(args));
    const Parsed p = parse(args);
    EXPECT_EQ(p.code, kExitUsage);
    EXPECT_TRUE(p.out.empty());
    ASSERT_EQ(p.err.rfind("qvl-run: error: ", 0), 0u) << p.err;
    const std::size_t first_end = p.err.find('\n');
    ASSERT_NE(first_end, std::string::npos);
    EXPECT_NE(p.err.substr(0, first_end).find(fragment), std::string::npos) << p.err;
    const std::string rest = p.err.substr(first_end + 1);
    if (!rest.empty()) {
        EXPECT_EQ(rest.rfind("hint: ", 0), 0u) << p.err;
        EXPECT_EQ(rest.find('\n'), rest.size() - 1) << p.err;
    }
}

TEST(ArgsTest, MinimalCommandKeepsDefaults) {
    const Parsed p = parse({"-m", "model", "-p", "hello"});
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_TRUE(p.err.empty());
    const RunOptions& o = p.options;
    EXPECT_EQ(o.model_dir, "model");
    EXPECT_EQ(o.prompt, "hello");
    EXPECT_TRUE(o.prompt_given);
    EXPECT_TRUE(o.images.empty());
    EXPECT_EQ(o.n_predict, 128);
    EXPECT_EQ(o.ctx_size, 4096);
    EXPECT_EQ(o.threads, 0);
    EXPECT_FALSE(o.temperature || o.top_k || o.top_p || o.seed);
    EXPECT_FALSE(o.image_min_tokens || o.image_max_tokens);
    EXPECT_FALSE(o.raw || o.json || o.tokenize || o.ignore_eos || o.version || o.help);
    EXPECT_EQ(o.verbosity, 0);
}

TEST(ArgsTest, EveryFlagLongForm) {
    const Parsed p = parse({"--model=dir",
                            "--image",
                            "a.jpg",
                            "--image",
                            "b.png",
                            "--prompt",
                            "-what is this",
                            "--system",
                            "be brief",
                            "--n-predict",
                            "64",
                            "--ignore-eos",
                            "--temp",
                            "0",
                            "--top-k",
                            "20",
                            "--top-p",
                            "0.8",
                            "--seed",
                            "18446744073709551615",
                            "--ctx-size",
                            "16",
                            "--threads",
                            "2",
                            "--image-min-tokens",
                            "4",
                            "--image-max-tokens",
                            "4",
                            "--json",
                            "--dump-pixels",
                            "p.npy",
                            "--dump-vision",
                            "v.npy",
                            "--dump-logits",
                            "l.npy",
                            "--verbose"});
    ASSERT_EQ(p.code, -1) << p.err;
    const RunOptions& o = p.options;
    EXPECT_EQ(o.model_dir, "dir");
    EXPECT_EQ(o.images, (std::vector<std::string>{"a.jpg", "b.png"}));
    EXPECT_EQ(o.prompt, "-what is this");  // a value may start with '-'
    EXPECT_EQ(o.system, "be brief");
    EXPECT_EQ(o.n_predict, 64);
    EXPECT_TRUE(o.ignore_eos);
    EXPECT_EQ(o.temperature, 0.0f);
    EXPECT_EQ(o.top_k, 20);
    EXPECT_FLOAT_EQ(*o.top_p, 0.8f);
    EXPECT_EQ(o.seed, 18446744073709551615ull);
    EXPECT_EQ(o.ctx_size, 16);
    EXPECT_EQ(o.threads, 2);
    EXPECT_EQ(o.image_min_tokens, 4);
    EXPECT_EQ(o.image_max_tokens, 4);
    EXPECT_TRUE(o.json);
    EXPECT_EQ(o.dump_pixels, "p.npy");
    EXPECT_EQ(o.dump_vision, "v.npy");
    EXPECT_EQ(o.dump_logits, "l.npy");
    EXPECT_EQ(o.verbosity, 1);
}

TEST(ArgsTest, ShortFormsAndOtherPromptSources) {
    Parsed p = parse({"-m", "d", "-i", "x.jpg", "-f", "prompt.txt", "-s", "sys", "-n", "0", "-c",
                      "1048576", "-t", "1024", "-q"});
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_EQ(p.options.prompt_file, "prompt.txt");
    EXPECT_FALSE(p.options.prompt_given);
    EXPECT_EQ(p.options.n_predict, 0);
    EXPECT_EQ(p.options.ctx_size, 1 << 20);
    EXPECT_EQ(p.options.threads, 1024);
    EXPECT_EQ(p.options.verbosity, -1);

    p = parse({"-m", "d", "--messages", "chat.json", "--tokenize", "--json"});
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_EQ(p.options.messages_file, "chat.json");
    EXPECT_TRUE(p.options.tokenize);

    p = parse({"-m", "d", "--raw", "-p", "<|im_start|>user\nhi"});
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_TRUE(p.options.raw);

    p = parse({"-m", "d", "-p", ""});  // an empty prompt is still a prompt
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_TRUE(p.options.prompt_given);
}

TEST(ArgsTest, WeightsFormat) {
    EXPECT_FALSE(parse({"-m", "x", "-p", "hi"}).options.weights_q8);
    const Parsed q8 = parse({"-m", "x", "-p", "hi", "--weights", "q8"});
    EXPECT_EQ(q8.code, -1) << q8.err;  // -1: parsed, run on
    EXPECT_TRUE(q8.options.weights_q8);
    EXPECT_FALSE(parse({"-m", "x", "-p", "hi", "--weights", "bf16"}).options.weights_q8);
    const Parsed q4 = parse({"-m", "x", "-p", "hi", "--weights", "q4"});
    EXPECT_EQ(q4.code, -1) << q4.err;
    EXPECT_TRUE(q4.options.weights_q4);
    EXPECT_FALSE(q4.options.weights_q8);
    expect_usage_error({"-m", "x", "-p", "hi", "--weights", "q5"}, "--weights: 'q5'");
    EXPECT_NE(parse({"--help"}).out.find("--weights"), std::string::npos);
    EXPECT_FALSE(parse({"-m", "x", "-p", "hi"}).options.vision_q8);
    const Parsed v8 = parse({"-m", "x", "-p", "hi", "--vision-weights", "q8"});
    EXPECT_EQ(v8.code, -1) << v8.err;
    EXPECT_TRUE(v8.options.vision_q8);
    EXPECT_FALSE(v8.options.weights_q8);  // the text decoder stays as stored
    expect_usage_error({"-m", "x", "-p", "hi", "--vision-weights", "q4"}, "--vision-weights: 'q4'");
    EXPECT_NE(parse({"--help"}).out.find("--vision-weights"), std::string::npos);
}

TEST(ArgsTest, HelpPrintsUsageToOut) {
    for (const char* flag : {"-h", "--help"}) {
        const Parsed p = parse({flag});
        EXPECT_EQ(p.code, kExitOk);
        EXPECT_TRUE(p.options.help);
        EXPECT_TRUE(p.err.empty());
        EXPECT_EQ(p.out.rfind("Usage: qvl-run -m MODEL_DIR", 0), 0u) << p.out;
        for (const char* name : {"--model",
                                 "--image",
                                 "--prompt",
                                 "--file",
                                 "--system",
                                 "--messages",
                                 "--raw",
                                 "--n-predict",
                                 "--ignore-eos",
                                 "--temp",
                                 "--top-k",
                                 "--top-p",
                                 "--seed",
                                 "--ctx-size",
                                 "--threads",
                                 "--image-min-tokens",
                                 "--image-max-tokens",
                                 "--json",
                                 "--tokenize",
                                 "--dump-pixels",
                                 "--dump-vision",
                                 "--dump-logits",
                                 "--verbose",
                                 "--quiet",
                                 "--version",
                                 "--help"}) {
            EXPECT_NE(p.out.find(name), std::string::npos) << name;
        }
    }
    EXPECT_EQ(usage_text(), parse({"--help"}).out);
}

TEST(ArgsTest, VersionNeedsNoModel) {
    const Parsed p = parse({"--version"});
    EXPECT_EQ(p.code, -1) << p.err;
    EXPECT_TRUE(p.options.version);
    EXPECT_TRUE(p.out.empty());
}

TEST(ArgsTest, MissingModelOrPrompt) {
    expect_usage_error({}, "missing -m/--model");
    expect_usage_error({"-p", "hi"}, "missing -m/--model");
    expect_usage_error({"-m", "", "-p", "hi"}, "-m/--model: empty path");
    expect_usage_error({"-m", "d"}, "no prompt");
    expect_usage_error({"-m", "d", "-i", "a.jpg"}, "no prompt");
}

TEST(ArgsTest, PromptSourcesExcludeEachOther) {
    expect_usage_error({"-m", "d", "-p", "a", "-f", "b"}, "-p and -f exclude each other");
    expect_usage_error({"-m", "d", "-p", "a", "--messages", "m.json"}, "exclude each other");
    expect_usage_error({"-m", "d", "-f", "a", "--messages", "m.json"}, "exclude each other");
    expect_usage_error({"-m", "d", "--messages", "m.json", "-i", "a.jpg"}, "-i and -s");
    expect_usage_error({"-m", "d", "--messages", "m.json", "-s", "sys"}, "-i and -s");
    expect_usage_error({"-m", "d", "--raw", "-p", "x", "-i", "a.jpg"}, "--raw");
    expect_usage_error({"-m", "d", "--raw", "--messages", "m.json"}, "--raw");
    expect_usage_error({"-m", "d", "--raw", "-p", "x", "-s", "sys"}, "--raw");
    expect_usage_error({"-m", "d", "-f", ""}, "-f/--file: empty path");
    expect_usage_error({"-m", "d", "--messages", ""}, "--messages: empty path");
    expect_usage_error({"-m", "d", "-p", "x", "-i", ""}, "-i/--image: empty path");
}

TEST(ArgsTest, NumericRanges) {
    const std::vector<std::string> base = {"-m", "d", "-p", "x"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    };
    expect_usage_error(with({"-n", "-1"}), "--n-predict: -1 is out of range [0, 1048576]");
    expect_usage_error(with({"-n", "1048577"}), "out of range");
    expect_usage_error(with({"-n", "12x"}), "--n-predict: '12x' is not an integer");
    expect_usage_error(with({"-n", "1e3"}), "not an integer");
    expect_usage_error(with({"-n", "99999999999999999999"}), "out of range");
    expect_usage_error(with({"-c", "15"}), "--ctx-size: 15 is out of range [16, 1048576]");
    expect_usage_error(with({"-c", "1048577"}), "--ctx-size");
    expect_usage_error(with({"-t", "-1"}), "--threads: -1 is out of range [0, 1024]");
    expect_usage_error(with({"-t", "1025"}), "--threads");
    expect_usage_error(with({"--temp", "-0.5"}), "--temp: -0.5 is negative");
    expect_usage_error(with({"--temp", "nan"}), "not a finite number");
    expect_usage_error(with({"--temp", "inf"}), "not a finite number");
    expect_usage_error(with({"--temp", ""}), "not a finite number");
    expect_usage_error(with({"--top-k", "-1"}), "--top-k");
    expect_usage_error(with({"--top-p", "0"}), "--top-p: 0 is out of range (0, 1]");
    expect_usage_error(with({"--top-p", "1.01"}), "--top-p");
    expect_usage_error(with({"--seed", "-1"}), "--seed: '-1' is not an integer");
    expect_usage_error(with({"--seed", "18446744073709551616"}), "--seed");
    expect_usage_error(with({"--image-min-tokens", "0"}), "--image-min-tokens");
    expect_usage_error(with({"--image-max-tokens", "0"}), "--image-max-tokens");
    expect_usage_error(with({"--image-min-tokens", "300", "--image-max-tokens", "200"}),
                       "--image-min-tokens 300 is above --image-max-tokens 200");

    const Parsed p = parse(with({"--top-p", "1", "--temp", "1.5", "--top-k", "0", "--seed", "0"}));
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_EQ(p.options.top_p, 1.0f);
    EXPECT_EQ(p.options.temperature, 1.5f);
    EXPECT_EQ(p.options.top_k, 0);
    EXPECT_EQ(p.options.seed, 0u);
}

TEST(ArgsTest, UnknownAndMalformedArguments) {
    expect_usage_error({"-m", "d", "-p", "x", "--bogus"}, "unknown option '--bogus'");
    expect_usage_error({"-m", "d", "-p", "x", "--bogus=3"}, "unknown option '--bogus'");
    expect_usage_error({"-m", "d", "-p", "x", "-Z"}, "unknown option '-Z'");
    expect_usage_error({"-m", "d", "-p", "what", "is", "this"}, "unexpected argument 'is'");
    expect_usage_error({"-m", "d", "-p", "x", "--", "-p"}, "unexpected argument '-p'");
    expect_usage_error({"-m", "d", "-p"}, "--prompt needs a value");
    expect_usage_error({"-m", "d", "-p", "x", "-i"}, "--image needs a value");
    expect_usage_error({"-m", "d", "-p", "x", "-p", "y"}, "--prompt given more than once");
    expect_usage_error({"-m", "d", "-p", "x", "-v", "-q"}, "exclude each other");

    // A near miss gets a suggestion on the hint line.
    const Parsed p = parse({"-m", "d", "-p", "x", "--n_predict", "5"});
    EXPECT_EQ(p.code, kExitUsage);
    EXPECT_NE(p.err.find("hint: did you mean '--n-predict'?"), std::string::npos) << p.err;
}

TEST(ArgsTest, DumpsNeedWhatTheyDump) {
    expect_usage_error({"-m", "d", "-p", "x", "--dump-pixels", "p.npy"}, "needs an image");
    expect_usage_error({"-m", "d", "-p", "x", "--dump-vision", "v.npy"}, "needs an image");
    expect_usage_error({"-m", "d", "-p", "x", "-i", "a.png", "--tokenize", "--dump-logits", "l"},
                       "--tokenize stops before --dump-logits");
    Parsed p = parse({"-m", "d", "-p", "x", "--dump-logits", "l.npy"});
    EXPECT_EQ(p.code, -1) << p.err;
    p = parse({"-m", "d", "--messages", "m.json", "--dump-vision", "v.npy"});
    EXPECT_EQ(p.code, -1) << p.err;
    p = parse({"-m", "d", "-i", "a.png", "-p", "x", "--tokenize", "--dump-pixels", "p.npy"});
    EXPECT_EQ(p.code, -1) << p.err;
}

TEST(ArgsTest, DoesNotTouchTheFileSystem) {
    // Nonexistent paths are the caller's business (exit 3 for the model, 4 for inputs).
    const Parsed p = parse(
        {"-m", "/nonexistent/model", "-i", "/nonexistent/a.jpg", "-f", "/nonexistent/prompt.txt"});
    EXPECT_EQ(p.code, -1) << p.err;
}

TEST(ArgsTest, PenaltyFlags) {
    const std::vector<std::string> base = {"-m", "d", "-p", "x"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> v = base;
        v.insert(v.end(), extra.begin(), extra.end());
        return v;
    };
    Parsed p = parse(base);
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_FALSE(p.options.repeat_penalty || p.options.presence_penalty);
    p = parse(with({"--repeat-penalty", "1.1", "--presence-penalty", "-2"}));
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_EQ(p.options.repeat_penalty, 1.1f);
    EXPECT_EQ(p.options.presence_penalty, -2.0f);
    p = parse(with({"--presence-penalty=1.5"}));
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_EQ(p.options.presence_penalty, 1.5f);
    expect_usage_error(with({"--repeat-penalty", "0"}), "--repeat-penalty: 0 is not above 0");
    expect_usage_error(with({"--repeat-penalty", "-1"}), "--repeat-penalty");
    expect_usage_error(with({"--repeat-penalty", "nan"}), "not a finite number");
    expect_usage_error(with({"--repeat-penalty", "x"}), "--repeat-penalty: 'x'");
    expect_usage_error(with({"--presence-penalty", "2.5"}),
                       "--presence-penalty: 2.5 is out of range [-2, 2]");
    expect_usage_error(with({"--presence-penalty", "-2.01"}), "--presence-penalty");
    expect_usage_error(with({"--presence-penalty", "inf"}), "not a finite number");
    expect_usage_error(with({"--presence-penalty"}), "--presence-penalty needs a value");
    const std::string help = usage_text();
    EXPECT_NE(help.find("--repeat-penalty"), std::string::npos);
    EXPECT_NE(help.find("--presence-penalty"), std::string::npos);
}

TEST(ArgsTest, BatchFlags) {
    Parsed p = parse({"-m", "d", "--batch", "in.jsonl"});
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_EQ(p.options.batch_file, "in.jsonl");
    EXPECT_EQ(p.options.parallel, 1);
    EXPECT_EQ(p.options.admission_budget_ms, 500.0);
    p = parse({"-m", "d", "--batch", "in.jsonl", "--parallel", "4", "--admission-budget-ms", "12.5",
               "-o", "out.jsonl"});
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_EQ(p.options.parallel, 4);
    EXPECT_EQ(p.options.admission_budget_ms, 12.5);
    EXPECT_EQ(p.options.output_file, "out.jsonl");
    p = parse({"-m", "d", "--batch", "in.jsonl", "--admission-budget-ms", "0"});
    ASSERT_EQ(p.code, -1) << p.err;
    EXPECT_EQ(p.options.admission_budget_ms, 0.0);
    const std::vector<std::string> batch = {"-m", "d", "--batch", "in.jsonl"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> v = batch;
        v.insert(v.end(), extra.begin(), extra.end());
        return v;
    };
    expect_usage_error(with({"--admission-budget-ms", "-1"}),
                       "--admission-budget-ms: -1 is outside [0, 1000000]");
    expect_usage_error(with({"--admission-budget-ms", "2e6"}), "--admission-budget-ms");
    expect_usage_error(with({"--admission-budget-ms", "soon"}),
                       "--admission-budget-ms: 'soon' is not a finite number");
    expect_usage_error(with({"--parallel", "33"}), "--parallel");
    expect_usage_error({"-m", "d", "-p", "x", "--admission-budget-ms", "10"},
                       "go with --batch FILE");
    EXPECT_NE(usage_text().find("--admission-budget-ms"), std::string::npos);
}

}  // namespace
}  // namespace qvl::app

namespace qvl::app {
namespace {

// --video and -i keep the order of the command line; -v stays --verbose.
TEST(ArgsTest, VideoFlags) {
    const Parsed p =
        parse({"-m", "d", "--video", "a.mp4", "-i", "b.png", "--video=file:///c.webm", "-i",
               "file://d.png", "--video-fps", "0.5", "--video-max-frames", "8", "-v", "-p", "x"});
    ASSERT_EQ(p.code, -1) << p.err;
    using M = std::pair<bool, std::string>;
    EXPECT_EQ(
        p.options.media,
        (std::vector<M>{{true, "a.mp4"}, {false, "b.png"}, {true, "/c.webm"}, {false, "d.png"}}));
    EXPECT_EQ(p.options.video_fps, 0.5);
    EXPECT_EQ(p.options.video_max_frames, 8);
    EXPECT_EQ(p.options.verbosity, 1);
    expect_usage_error({"-m", "d", "-p", "x", "--video-fps", "-1"}, "--video-fps");
    expect_usage_error({"-m", "d", "-p", "x", "--video-fps", "abc"}, "--video-fps");
    expect_usage_error({"-m", "d", "-p", "x", "--video-max-frames", "0"}, "--video-max-frames");
    expect_usage_error({"-m", "d", "-p", "x", "--video", ""}, "--video: empty path");
    expect_usage_error({"-m", "d", "-p", "x", "--video", "-", "-i", "-"}, "stdin");
    expect_usage_error({"-m", "d", "--messages", "m.json", "--video", "a.mp4"}, "--video");
    expect_usage_error({"-m", "d", "--raw", "-p", "x", "--video", "a.mp4"}, "--video");
    const Parsed chat = parse({"-m", "d", "--interactive", "--video", "a.mp4"});
    EXPECT_EQ(chat.code, -1) << chat.err;  // the first turn's video (chat mode has /video too)
    expect_usage_error({"-m", "d", "--interactive", "--video", "-"}, "stdin");
    const Parsed dump = parse({"-m", "d", "-p", "x", "--video", "a.mp4", "--dump-pixels", "p.npy"});
    EXPECT_EQ(dump.code, -1) << dump.err;
    const Parsed help = parse({"--help"});
    EXPECT_NE(help.out.find("--video FILE"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("--video-fps F"), std::string::npos);
    EXPECT_NE(help.out.find("--video-max-frames N"), std::string::npos);
    EXPECT_NE(help.out.find("/video PATH"), std::string::npos);
}

}  // namespace
}  // namespace qvl::app
