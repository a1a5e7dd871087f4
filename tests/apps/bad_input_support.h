// The bad-input suite's tools (bad_input_*_test.cpp): running qvl-run as a separate process
// with a time and memory bound, the contract checks (the documented exit code, exactly one
// "qvl-run: error:" line naming the file or the problem, no signal), writers of lying
// safetensors files and of PNGs of any header, and the BadInput fixture, which makes broken
// copies of tests/data/tiny-qwen3vl (large files symlinked) with one thing changed.
#pragma once

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

namespace qvl::bad_input {

namespace fs = std::filesystem;

inline const fs::path kTiny = fs::path(QVL_TEST_DATA_DIR) / "tiny-qwen3vl";
inline const fs::path kPng = fs::path(QVL_TEST_DATA_DIR) / "golden" / "images" / "img_64x64.png";
inline const fs::path kJpeg = fs::path(QVL_TEST_DATA_DIR) / ".." / ".." / "assets" / "sample.jpg";

// Exit codes of docs/cli.md (1, "anything else", is never the right answer here).
inline constexpr int kUsage = 2, kModel = 3, kInput = 4, kResource = 5;

// Generous bounds: a hostile input must fail fast, but sanitizer builds are slow.
inline constexpr int kTimeoutSeconds = 120;
inline constexpr long kMaxRssKb = 1536 * 1024;

struct RunResult {
    bool timed_out = false;
    int exit_code = -1;  // -1 when killed by a signal
    int signal = 0;
    std::string out, err;
    double seconds = 0;
    long max_rss_kb = 0;
};

inline double now_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Runs qvl-run with `args`, capturing stdout and stderr; kills it after kTimeoutSeconds.
// address_space_mb > 0 sets RLIMIT_AS in the child (memory-budget cases).
// interrupt_after_output: send SIGINT once stdout has at least that many bytes.
inline RunResult run_qvl(const std::vector<std::string>& args, long address_space_mb = 0,
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

inline std::vector<std::string> lines_starting_with(const std::string& text,
                                                    std::string_view prefix) {
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
inline void expect_refused(const RunResult& r, int code, std::string_view needle) {
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

inline void expect_success(const RunResult& r) {
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.signal, 0) << "stderr:\n" << r.err;
    EXPECT_EQ(r.exit_code, 0) << "stderr:\n" << r.err;
    EXPECT_TRUE(lines_starting_with(r.err, "qvl-run: error: ").empty()) << r.err;
    EXPECT_LT(r.max_rss_kb, kMaxRssKb);
}

inline std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Replaces the first occurrence of `from` (which must exist) with `to`.
inline std::string replace_once(std::string text, std::string_view from, std::string_view to) {
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

inline std::string u64_le(std::uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = char((v >> (8 * i)) & 0xff);
    return s;
}

// An honest file for `tensors` (offsets back to back).
inline std::string safetensors_bytes(const std::vector<RawTensor>& tensors) {
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
inline std::vector<RawTensor> tiny_tensors() {
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

inline constexpr const char* kNormName = "model.language_model.norm.weight";

inline RawTensor* find_tensor(std::vector<RawTensor>& tensors, std::string_view name) {
    for (RawTensor& t : tensors) {
        if (t.name == name) return &t;
    }
    ADD_FAILURE() << "tiny checkpoint lacks " << name;
    return nullptr;
}

// ---- PNG writing (stored deflate blocks), enough to make any size and any header -----------

inline std::uint32_t crc32(std::string_view bytes) {
    std::uint32_t crc = 0xffffffffu;
    for (unsigned char c : bytes) {
        crc ^= c;
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

inline std::string be32(std::uint32_t v) {
    return {char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff), char(v & 0xff)};
}

inline std::string png_chunk(std::string_view type, std::string_view body) {
    const std::string typed = std::string(type) + std::string(body);
    return be32(std::uint32_t(body.size())) + typed + be32(crc32(typed));
}

// zlib stream of `raw` in stored (uncompressed) blocks.
inline std::string zlib_stored(std::string_view raw) {
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

inline std::string png_ihdr(std::uint32_t width, std::uint32_t height) {
    return png_chunk("IHDR", be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5));
}

// An 8-bit RGB PNG of a gradient.
inline std::string make_png(int width, int height) {
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

}  // namespace qvl::bad_input
