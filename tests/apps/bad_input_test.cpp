// The bad-input suite: qvl-run, as a separate process, on broken model folders, broken images,
// prompts that do not fit and bad command lines. Every case checks the contract of the shared
// docs/cli.md: the documented exit code, exactly one "qvl-run: error:" line naming the file or
// the problem, no signal (no crash, no sanitizer abort), a bounded run time and peak RSS.
//
// Broken model folders are copies of tests/data/tiny-qwen3vl (large files symlinked) with one
// thing changed; broken images are made here from the golden PNGs and assets/sample.jpg.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors.h"
#include "support/scratch_dir.h"

#if defined(__SANITIZE_ADDRESS__)
#define QVL_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QVL_UNDER_ASAN 1
#endif
#endif

namespace qvl {
namespace {

namespace fs = std::filesystem;

const fs::path kTiny = fs::path(QVL_TEST_DATA_DIR) / "tiny-qwen3vl";
const fs::path kPng = fs::path(QVL_TEST_DATA_DIR) / "golden" / "images" / "img_64x64.png";
const fs::path kJpeg = fs::path(QVL_TEST_DATA_DIR) / ".." / ".." / "assets" / "sample.jpg";

// Exit codes of docs/cli.md (1, "anything else", is never the right answer here).
constexpr int kUsage = 2, kModel = 3, kInput = 4, kResource = 5;

// Generous bounds: a hostile input must fail fast, but sanitizer builds are slow.
constexpr int kTimeoutSeconds = 120;
constexpr long kMaxRssKb = 1536 * 1024;

struct RunResult {
    bool timed_out = false;
    int exit_code = -1;  // -1 when killed by a signal
    int signal = 0;
    std::string out, err;
    double seconds = 0;
    long max_rss_kb = 0;
};

double now_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Runs qvl-run with `args`, capturing stdout and stderr; kills it after kTimeoutSeconds.
// address_space_mb > 0 sets RLIMIT_AS in the child (memory-budget cases).
// interrupt_after_output: send SIGINT once stdout has at least that many bytes.
RunResult run_qvl(const std::vector<std::string>& args, long address_space_mb = 0,
                  std::size_t interrupt_after_output = 0) {
    RunResult r;
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
        ADD_FAILURE() << "pipe failed";
        return r;
    }
    std::vector<std::string> argv_s = {QVL_RUN_PATH};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);

    const double start = now_seconds();
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        if (address_space_mb > 0) {
            rlimit lim{rlim_t(address_space_mb) << 20, rlim_t(address_space_mb) << 20};
            setrlimit(RLIMIT_AS, &lim);
        }
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
        ADD_FAILURE() << "fork failed";
        return r;
    }
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&r.out, &r.err};
    int open_fds = 2;
    while (open_fds > 0) {
        const double left = kTimeoutSeconds - (now_seconds() - start);
        if (left <= 0) {
            r.timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, int(left * 1000) + 1) < 0) continue;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            char buf[4096];
            const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
            if (n > 0) {
                sinks[i]->append(buf, std::size_t(n));
                if (interrupt_after_output > 0 && r.out.size() >= interrupt_after_output) {
                    kill(pid, SIGINT);
                    interrupt_after_output = 0;
                }
            } else {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    for (pollfd& p : fds) {
        if (p.fd >= 0) close(p.fd);
    }
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    r.seconds = now_seconds() - start;
    r.max_rss_kb = ru.ru_maxrss;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    return r;
}

std::vector<std::string> lines_starting_with(const std::string& text, std::string_view prefix) {
    std::vector<std::string> found;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        if (text.compare(pos, prefix.size(), prefix) == 0) {
            found.push_back(text.substr(pos, eol - pos));
        }
        pos = eol + 1;
    }
    return found;
}

// The contract for a refused input: exit `code`, one error line containing `needle`.
void expect_refused(const RunResult& r, int code, std::string_view needle) {
    EXPECT_FALSE(r.timed_out) << "qvl-run did not finish in " << kTimeoutSeconds << " s";
    EXPECT_EQ(r.signal, 0) << "qvl-run died of signal " << r.signal << "\nstderr:\n" << r.err;
    EXPECT_EQ(r.exit_code, code) << "stderr:\n" << r.err;
    const std::vector<std::string> errors = lines_starting_with(r.err, "qvl-run: error: ");
    ASSERT_EQ(errors.size(), 1u) << "expected exactly one error line; stderr:\n" << r.err;
    if (std::getenv("QVL_BAD_INPUT_VERBOSE") != nullptr) {
        std::printf("    exit %d: %s\n", r.exit_code, errors[0].c_str());
    }
    EXPECT_NE(errors[0].find(needle), std::string::npos)
        << "the error line does not name '" << needle << "': " << errors[0];
    for (const char* bad : {"AddressSanitizer", "runtime error:", "terminate called", "Aborted"}) {
        EXPECT_EQ(r.err.find(bad), std::string::npos) << "stderr:\n" << r.err;
    }
    EXPECT_LT(r.max_rss_kb, kMaxRssKb) << "peak RSS " << r.max_rss_kb / 1024 << " MiB";
}

void expect_success(const RunResult& r) {
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.signal, 0) << "stderr:\n" << r.err;
    EXPECT_EQ(r.exit_code, 0) << "stderr:\n" << r.err;
    EXPECT_TRUE(lines_starting_with(r.err, "qvl-run: error: ").empty()) << r.err;
    EXPECT_LT(r.max_rss_kb, kMaxRssKb);
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Replaces the first occurrence of `from` (which must exist) with `to`.
std::string replace_once(std::string text, std::string_view from, std::string_view to) {
    const std::size_t pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << "fixture text lacks '" << from << "'";
    if (pos != std::string::npos) text.replace(pos, from.size(), to);
    return text;
}

// ---- safetensors writing with full control over the header (lies included) ----------------

struct RawTensor {
    std::string name;
    std::string dtype;  // written verbatim: "BF16", "I64", ...
    std::vector<std::int64_t> shape;
    std::string bytes;
};

std::string u64_le(std::uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = char((v >> (8 * i)) & 0xff);
    return s;
}

// An honest file for `tensors` (offsets back to back).
std::string safetensors_bytes(const std::vector<RawTensor>& tensors) {
    std::string header = "{";
    std::string data;
    for (const RawTensor& t : tensors) {
        if (header.size() > 1) header += ",";
        header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
        for (std::size_t i = 0; i < t.shape.size(); ++i) {
            if (i > 0) header += ',';
            header += std::to_string(t.shape[i]);
        }
        header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
                  std::to_string(data.size() + t.bytes.size()) + "]}";
        data += t.bytes;
    }
    header += "}";
    while (header.size() % 8 != 0) header += ' ';
    return u64_le(header.size()) + header + data;
}

// The tiny checkpoint's tensors, in file order.
std::vector<RawTensor> tiny_tensors() {
    base::Result<io::SafetensorsFile> f = io::SafetensorsFile::open(kTiny / "model.safetensors");
    EXPECT_TRUE(f.ok()) << f.status().message();
    std::vector<RawTensor> out;
    if (!f.ok()) return out;
    for (const io::TensorInfo& t : f->tensors()) {
        out.push_back({t.name, io::dtype_name(t.dtype), t.shape,
                       std::string(reinterpret_cast<const char*>(t.data), t.n_bytes)});
    }
    return out;
}

constexpr const char* kNormName = "model.language_model.norm.weight";

RawTensor* find_tensor(std::vector<RawTensor>& tensors, std::string_view name) {
    for (RawTensor& t : tensors) {
        if (t.name == name) return &t;
    }
    ADD_FAILURE() << "tiny checkpoint lacks " << name;
    return nullptr;
}

// ---- PNG writing (stored deflate blocks), enough to make any size and any header -----------

std::uint32_t crc32(std::string_view bytes) {
    std::uint32_t crc = 0xffffffffu;
    for (unsigned char c : bytes) {
        crc ^= c;
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

std::string be32(std::uint32_t v) {
    return {char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff), char(v & 0xff)};
}

std::string png_chunk(std::string_view type, std::string_view body) {
    const std::string typed = std::string(type) + std::string(body);
    return be32(std::uint32_t(body.size())) + typed + be32(crc32(typed));
}

// zlib stream of `raw` in stored (uncompressed) blocks.
std::string zlib_stored(std::string_view raw) {
    std::string z = "\x78\x01";
    std::size_t pos = 0;
    do {
        const std::size_t n = std::min<std::size_t>(raw.size() - pos, 65535);
        const bool last = pos + n == raw.size();
        z += char(last ? 1 : 0);
        z += char(n & 0xff);
        z += char(n >> 8);
        z += char(~n & 0xff);
        z += char((~n >> 8) & 0xff);
        z.append(raw.substr(pos, n));
        pos += n;
    } while (pos < raw.size());
    std::uint32_t a = 1, b = 0;
    for (unsigned char c : raw) {
        a = (a + c) % 65521;
        b = (b + a) % 65521;
    }
    return z + be32((b << 16) | a);
}

std::string png_ihdr(std::uint32_t width, std::uint32_t height) {
    return png_chunk("IHDR", be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5));
}

// An 8-bit RGB PNG of a gradient.
std::string make_png(int width, int height) {
    std::string raw;
    for (int y = 0; y < height; ++y) {
        raw += '\0';  // filter: none
        for (int x = 0; x < width; ++x) {
            raw += char(x * 7);
            raw += char(y * 5);
            raw += char((x + y) * 3);
        }
    }
    return std::string("\x89PNG\r\n\x1a\n", 8) +
           png_ihdr(std::uint32_t(width), std::uint32_t(height)) +
           png_chunk("IDAT", zlib_stored(raw)) + png_chunk("IEND", "");
}

// ---- the fixture -----------------------------------------------------------------------------

class BadInput : public ::testing::Test {
  protected:
    // A copy of the tiny model folder: small files copied, large ones symlinked.
    fs::path model_copy(const std::string& name) {
        const fs::path dir = scratch_.path() / name;
        fs::create_directories(dir);
        for (const fs::directory_entry& e : fs::directory_iterator(kTiny)) {
            const fs::path to = dir / e.path().filename();
            if (e.file_size() > 100000) {
                fs::create_symlink(fs::absolute(e.path()), to);
            } else {
                fs::copy_file(e.path(), to);
            }
        }
        return dir;
    }

    fs::path model_with_config(const std::string& name, const std::string& config_text) {
        const fs::path dir = model_copy(name);
        fs::remove(dir / "config.json");
        scratch_.write(name + "/config.json", config_text);
        return dir;
    }

    fs::path model_with_weights(const std::string& name, const std::string& safetensors) {
        const fs::path dir = model_copy(name);
        fs::remove(dir / "model.safetensors");
        scratch_.write(name + "/model.safetensors", safetensors);
        return dir;
    }

    // A prompt run with the tiny model (greedy, one thread, one token) plus `extra`.
    static std::vector<std::string> args(const fs::path& model, std::vector<std::string> extra) {
        std::vector<std::string> a = {"-m", model.string(), "-t", "1", "--temp", "0"};
        a.insert(a.end(), extra.begin(), extra.end());
        if (std::find(a.begin(), a.end(), "-n") == a.end()) a.insert(a.end(), {"-n", "1"});
        if (std::find(a.begin(), a.end(), "-p") == a.end() &&
            std::find(a.begin(), a.end(), "-f") == a.end() &&
            std::find(a.begin(), a.end(), "--messages") == a.end()) {
            a.insert(a.end(), {"-p", "Describe."});
        }
        return a;
    }

    fs::path image(const std::string& name, const std::string& bytes) {
        return scratch_.write("images/" + name, bytes);
    }

    testing::ScratchDir scratch_;
    const std::string tiny_config_ = read_file(kTiny / "config.json");
};

// ---- the model folder ------------------------------------------------------------------------

TEST_F(BadInput, MissingModelFolder) {
    const fs::path missing = scratch_.path() / "no-such-model";
    expect_refused(run_qvl(args(missing, {})), kModel, "no-such-model");
}

TEST_F(BadInput, ModelPathIsAFile) {
    expect_refused(run_qvl(args(kTiny / "config.json", {})), kModel, "config.json");
}

TEST_F(BadInput, MissingConfig) {
    const fs::path dir = model_copy("m");
    fs::remove(dir / "config.json");
    expect_refused(run_qvl(args(dir, {})), kModel, "config.json");
}

TEST_F(BadInput, ConfigNotJson) {
    expect_refused(run_qvl(args(model_with_config("m", "{\"model_type\": \"qwen3_vl\", oops"), {})),
                   kModel, "config.json");
}

TEST_F(BadInput, ConfigZeroDimension) {
    const std::string cfg = replace_once(tiny_config_, "\"hidden_size\": 64", "\"hidden_size\": 0");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "hidden_size");
}

TEST_F(BadInput, ConfigHugeDimension) {
    const std::string cfg = replace_once(tiny_config_, "\"intermediate_size\": 128",
                                         "\"intermediate_size\": 2000000000");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "intermediate_size");
}

TEST_F(BadInput, ConfigVocabBeyondInt) {
    const std::string cfg =
        replace_once(tiny_config_, "\"vocab_size\": 151936", "\"vocab_size\": 40000000000");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "vocab_size");
}

TEST_F(BadInput, ConfigNegativeHeads) {
    const std::string cfg =
        replace_once(tiny_config_, "\"num_attention_heads\": 4", "\"num_attention_heads\": -4");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "num_attention_heads");
}

TEST_F(BadInput, ConfigUnknownModelType) {
    const std::string cfg =
        replace_once(tiny_config_, "\"model_type\": \"qwen3_vl\"", "\"model_type\": \"llama\"");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "llama");
}

// More layers than the checkpoint holds: the first tensor of layer 4 is missing.
TEST_F(BadInput, ConfigMoreLayersThanWeights) {
    const std::string cfg =
        replace_once(tiny_config_, "\"num_hidden_layers\": 4", "\"num_hidden_layers\": 1000");
    expect_refused(run_qvl(args(model_with_config("m", cfg), {})), kModel, "layers.4.");
}

TEST_F(BadInput, MissingWeightsFile) {
    const fs::path dir = model_copy("m");
    fs::remove(dir / "model.safetensors");
    expect_refused(run_qvl(args(dir, {})), kModel, "model.safetensors");
}

TEST_F(BadInput, MissingTokenizer) {
    const fs::path dir = model_copy("m");
    fs::remove(dir / "tokenizer.json");
    expect_refused(run_qvl(args(dir, {})), kModel, "tokenizer.json");
}

TEST_F(BadInput, EmptySafetensors) {
    expect_refused(run_qvl(args(model_with_weights("m", ""), {})), kModel, "model.safetensors");
}

TEST_F(BadInput, TruncatedSafetensors) {
    const std::string full = read_file(kTiny / "model.safetensors");
    // Cut inside the header, then inside the data section.
    expect_refused(run_qvl(args(model_with_weights("a", full.substr(0, 4096)), {})), kModel,
                   "model.safetensors");
    expect_refused(run_qvl(args(model_with_weights("b", full.substr(0, full.size() / 2)), {})),
                   kModel, "model.safetensors");
}

TEST_F(BadInput, SafetensorsHeaderLengthLies) {
    std::string bytes = read_file(kTiny / "model.safetensors");
    bytes.replace(0, 8, u64_le(std::uint64_t(1) << 40));
    expect_refused(run_qvl(args(model_with_weights("a", bytes), {})), kModel, "header length");
    bytes.replace(0, 8, u64_le(bytes.size()));
    expect_refused(run_qvl(args(model_with_weights("b", bytes), {})), kModel, "header length");
}

TEST_F(BadInput, SafetensorsHeaderNotJson) {
    std::string bytes = read_file(kTiny / "model.safetensors");
    bytes[8] = '[';
    bytes[20] = '\x01';
    expect_refused(run_qvl(args(model_with_weights("m", bytes), {})), kModel, "model.safetensors");
}

TEST_F(BadInput, TensorMissing) {
    std::vector<RawTensor> t = tiny_tensors();
    std::erase_if(t, [](const RawTensor& x) { return x.name == kNormName; });
    expect_refused(run_qvl(args(model_with_weights("m", safetensors_bytes(t)), {})), kModel,
                   kNormName);
}

TEST_F(BadInput, TensorWrongShape) {
    std::vector<RawTensor> t = tiny_tensors();
    RawTensor* norm = find_tensor(t, kNormName);
    ASSERT_NE(norm, nullptr);
    norm->shape = {32, 2};  // same bytes, not the [64] the config asks for
    expect_refused(run_qvl(args(model_with_weights("m", safetensors_bytes(t)), {})), kModel,
                   kNormName);
}

TEST_F(BadInput, TensorUnsupportedDtype) {
    std::vector<RawTensor> t = tiny_tensors();
    RawTensor* norm = find_tensor(t, kNormName);
    ASSERT_NE(norm, nullptr);
    norm->dtype = "I64";
    norm->bytes.assign(64 * 8, '\0');
    expect_refused(run_qvl(args(model_with_weights("m", safetensors_bytes(t)), {})), kModel, "I64");
}

// The header says BF16 [64] (128 bytes) but its range holds 64 bytes.
TEST_F(BadInput, TensorRangeDisagreesWithShape) {
    std::vector<RawTensor> t = tiny_tensors();
    RawTensor* norm = find_tensor(t, kNormName);
    ASSERT_NE(norm, nullptr);
    norm->bytes.resize(64);
    expect_refused(run_qvl(args(model_with_weights("m", safetensors_bytes(t)), {})), kModel,
                   kNormName);
}

// ---- images ------------------------------------------------------------------------------------

TEST_F(BadInput, ImageMissing) {
    const fs::path missing = scratch_.path() / "no-such-image.png";
    expect_refused(run_qvl(args(kTiny, {"-i", missing.string()})), kInput, "no-such-image.png");
}

TEST_F(BadInput, ImageEmpty) {
    expect_refused(run_qvl(args(kTiny, {"-i", image("empty.png", "").string()})), kInput,
                   "empty.png");
}

TEST_F(BadInput, ImageNotAnImage) {
    expect_refused(run_qvl(args(kTiny, {"-i", image("notes.jpg", "just some text\n").string()})),
                   kInput, "notes.jpg");
}

TEST_F(BadInput, ImageIsADirectory) {
    expect_refused(run_qvl(args(kTiny, {"-i", scratch_.path().string()})), kInput,
                   scratch_.path().filename().string());
}

TEST_F(BadInput, ImageTruncatedPng) {
    const std::string png = read_file(kPng);
    expect_refused(
        run_qvl(args(kTiny, {"-i", image("cut.png", png.substr(0, png.size() / 2)).string()})),
        kInput, "cut.png");
    expect_refused(run_qvl(args(kTiny, {"-i", image("sig.png", png.substr(0, 8)).string()})),
                   kInput, "sig.png");
}

TEST_F(BadInput, ImageTruncatedJpeg) {
    const std::string jpg = read_file(kJpeg);
    ASSERT_GT(jpg.size(), 1000u);
    expect_refused(
        run_qvl(args(kTiny, {"-i", image("cut.jpg", jpg.substr(0, jpg.size() / 2)).string()})),
        kInput, "cut.jpg");
    expect_refused(run_qvl(args(kTiny, {"-i", image("soi.jpg", jpg.substr(0, 2)).string()})),
                   kInput, "soi.jpg");
}

TEST_F(BadInput, ImagePngBadCrc) {
    std::string png = make_png(8, 8);
    png[8 + 8 + 13] ^= 0x55;  // the IHDR CRC (signature, length + type, 13 body bytes)
    expect_refused(run_qvl(args(kTiny, {"-i", image("crc.png", png).string()})), kInput, "crc.png");
}

TEST_F(BadInput, ImagePngClaims100000Squared) {
    // A valid IHDR (CRC fixed) claiming 100000 x 100000 RGB, then a few bytes of data.
    const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + png_ihdr(100000, 100000) +
                            png_chunk("IDAT", zlib_stored(std::string(64, '\0'))) +
                            png_chunk("IEND", "");
    const RunResult r = run_qvl(args(kTiny, {"-i", image("huge.png", png).string()}));
    // A pixel count over the decoder's limit is an invalid input, as for every format: exit 4
    // (the limit is named); the file is refused before any pixel memory is allocated.
    expect_refused(r, kInput, "huge.png");
    EXPECT_NE(r.err.find("exceeds the limit"), std::string::npos) << r.err;
}

TEST_F(BadInput, ImageJpegClaimsHugeSize) {
    std::string jpg = read_file(kJpeg);
    // SOF0/SOF2 marker: FF C0 or FF C2, then length (2), precision (1), height (2), width (2).
    std::size_t sof = std::string::npos;
    for (std::size_t i = 2; i + 9 < jpg.size(); ++i) {
        if (jpg[i] == '\xff' && (jpg[i + 1] == '\xc0' || jpg[i + 1] == '\xc2')) {
            sof = i;
            break;
        }
    }
    ASSERT_NE(sof, std::string::npos);
    for (std::size_t k : {sof + 5, sof + 7}) {
        jpg[k] = '\xfd';
        jpg[k + 1] = '\xe8';  // 65000, under libjpeg's 65500 maximum: 4.2e9 pixels
    }
    const RunResult r = run_qvl(args(kTiny, {"-i", image("huge.jpg", jpg).string()}));
    expect_refused(r, kInput, "huge.jpg");
    EXPECT_NE(r.err.find("exceeds the limit"), std::string::npos) << r.err;
}

TEST_F(BadInput, ImageThin1x1000) {
    expect_refused(run_qvl(args(kTiny, {"-i", image("thin.png", make_png(1, 1000)).string()})),
                   kInput, "thin.png");
}

TEST_F(BadInput, ImageOnePixelWorks) {
    expect_success(run_qvl(args(kTiny, {"-i", image("one.png", make_png(1, 1)).string()})));
}

// ---- prompts, context and generation budget ---------------------------------------------------

TEST_F(BadInput, PromptFileMissing) {
    const fs::path missing = scratch_.path() / "no-such-prompt.txt";
    expect_refused(run_qvl(args(kTiny, {"-f", missing.string()})), kInput, "no-such-prompt.txt");
}

TEST_F(BadInput, PromptInvalidUtf8IsRefused) {
    const fs::path p = scratch_.write("bad.txt", "hello \xff\xfe world \xc3");
    const RunResult r = run_qvl(args(kTiny, {"-f", p.string()}));
    expect_refused(r, kInput, "bad.txt");
    // The offset is into the file (6: the 0xff), not into the rendered chat prompt.
    expect_refused(r, kInput, "bad byte 0xff at byte offset 6");
}

TEST_F(BadInput, PromptLongerThanContext) {
    std::string prompt;
    for (int i = 0; i < 200; ++i) prompt += "word" + std::to_string(i) + " ";
    expect_refused(run_qvl(args(kTiny, {"-c", "64", "-p", prompt})), kResource, "context");
}

TEST_F(BadInput, HugePredictCount) {
    expect_refused(run_qvl(args(kTiny, {"-c", "64", "-n", "1000000"})), kResource, "context");
}

TEST_F(BadInput, ImageTokensBeyondContext) {
    // 64x64 is 4 tokens after merging, the chat template ~15: a 16-token context cannot hold it.
    expect_refused(run_qvl(args(kTiny, {"-c", "16", "-i", kPng.string()})), kResource, "context");
}

// The session's arenas for a million-token context do not fit a 1 GiB address space: refused
// with exit 5 before anything is touched, instead of a crash or the OOM killer.
TEST_F(BadInput, ContextBeyondMemory) {
#if defined(QVL_UNDER_ASAN)
    GTEST_SKIP() << "RLIMIT_AS cannot be combined with ASan's shadow memory";
#else
    const RunResult r = run_qvl(args(kTiny, {"-c", "1048576"}), 1024);
    // Either the memory budget refuses ("memory budget: ... MiB") or the allocation fails
    // ("could not allocate"); both name the amount.
    expect_refused(r, kResource, "");
    EXPECT_TRUE(r.err.find("memory budget") != std::string::npos ||
                r.err.find("could not allocate") != std::string::npos)
        << r.err;
    EXPECT_EQ(lines_starting_with(r.err, "hint: ").size(), 1u) << r.err;
#endif
}

// SIGINT during generation: the text so far is on stdout and the exit code is 130.
TEST_F(BadInput, InterruptFlushesAndExits130) {
    const RunResult r =
        run_qvl(args(kTiny, {"-c", "100000", "-n", "99000", "--ignore-eos"}), 0, 16);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.signal, 0) << r.err;
    EXPECT_EQ(r.exit_code, 130) << r.err;
    EXPECT_GE(r.out.size(), 16u);
    EXPECT_TRUE(lines_starting_with(r.err, "qvl-run: error: ").empty()) << r.err;
}

TEST_F(BadInput, MessagesFileMissing) {
    const fs::path missing = scratch_.path() / "no-such-messages.json";
    expect_refused(run_qvl(args(kTiny, {"--messages", missing.string()})), kInput,
                   "no-such-messages.json");
}

TEST_F(BadInput, MessagesNotJson) {
    const fs::path p = scratch_.write("msgs.json", "[{\"role\": \"user\", \"content\": ");
    expect_refused(run_qvl(args(kTiny, {"--messages", p.string()})), kInput, "msgs.json");
}

TEST_F(BadInput, MessagesImageMissing) {
    const fs::path p = scratch_.write(
        "msgs.json", R"([{"role": "user", "content": [{"type": "image", "image": "gone.png"}, )"
                     R"({"type": "text", "text": "what?"}]}])");
    expect_refused(run_qvl(args(kTiny, {"--messages", p.string()})), kInput, "gone.png");
}

// ---- the command line ------------------------------------------------------------------------

TEST_F(BadInput, UsageErrors) {
    expect_refused(run_qvl({"-p", "hi"}), kUsage, "-m");
    expect_refused(run_qvl({"-m", kTiny.string(), "-p", "hi", "--no-such-flag"}), kUsage,
                   "--no-such-flag");
    expect_refused(run_qvl({"-m", kTiny.string(), "-p", "hi", "-n", "-5"}), kUsage, "-n");
    expect_refused(run_qvl({"-m", kTiny.string(), "-p", "hi", "-c", "0"}), kUsage, "ctx-size");
}

TEST_F(BadInput, SanityTheTinyModelRuns) { expect_success(run_qvl(args(kTiny, {}))); }

}  // namespace
}  // namespace qvl
