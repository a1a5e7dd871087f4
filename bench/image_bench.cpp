// Image input benchmarks: decode a 1920x1080 JPEG, preprocess it into pixel_values (smart_resize
// to 1920x1088, bicubic resize, normalise, patchify), and both together; plus the same steps in
// PIL + numpy (bench/image_bench_pil.py, run from here so that both are measured in the same
// run). The JPEG is synthesised at start-up (deterministic: smooth gradients, texture, edges;
// quality 90, 4:2:0), so no large file is committed.
//   qvl-bench-kernels --benchmark_filter='^image/'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/image.h"
#include "io/image_decoders.h"
#include "model/image_preprocess.h"

namespace {

using namespace qvl;

constexpr int kWidth = 1920;
constexpr int kHeight = 1080;

io::Image synthetic_photo() {
    io::Image img{kWidth, kHeight, std::vector<std::uint8_t>(std::size_t(kWidth) * kHeight * 3)};
    std::uint32_t noise = 2463534242u;
    for (int y = 0; y < kHeight; ++y) {
        for (int x = 0; x < kWidth; ++x) {
            noise ^= noise << 13;
            noise ^= noise >> 17;
            noise ^= noise << 5;
            const bool edge = ((x / 160) + (y / 120)) % 7 == 0;
            for (int c = 0; c < 3; ++c) {
                const double v = 128 + 60 * std::sin(x * (0.004 + 0.002 * c) + y * 0.003) +
                                 40 * std::cos(y * (0.011 - 0.003 * c)) +
                                 double(int(noise >> (8 * c) & 31) - 16) + (edge ? 50 : 0);
                img.rgb[(std::size_t(y) * kWidth + x) * 3 + c] =
                    std::uint8_t(std::clamp(v, 0.0, 255.0));
            }
        }
    }
    return img;
}

const std::vector<std::byte>& test_jpeg() {
    static const std::vector<std::byte> bytes = [] {
        auto encoded = io::detail::encode_jpeg(synthetic_photo(), 90);
        if (!encoded.ok()) {
            std::fprintf(stderr, "%s\n", encoded.status().message().c_str());
            std::abort();
        }
        const auto& b = encoded.value();
        return std::vector<std::byte>(reinterpret_cast<const std::byte*>(b.data()),
                                      reinterpret_cast<const std::byte*>(b.data()) + b.size());
    }();
    return bytes;
}

const io::Image& decoded_photo() {
    static const io::Image image = io::decode_image(test_jpeg(), {}, "bench.jpg").value();
    return image;
}

void set_pixel_rate(benchmark::State& state) {
    state.counters["MPixps"] = benchmark::Counter(double(kWidth) * kHeight * 1e-6,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

void BM_decode(benchmark::State& state) {
    const auto& jpeg = test_jpeg();
    for (auto _ : state) {
        auto image = io::decode_image(jpeg, {}, "bench.jpg");
        benchmark::DoNotOptimize(image.value().rgb.data());
    }
    set_pixel_rate(state);
    state.counters["jpeg_KiB"] = double(jpeg.size()) / 1024;
}

void BM_preprocess(benchmark::State& state) {
    const io::Image& image = decoded_photo();
    for (auto _ : state) {
        auto pre = model::preprocess_image(image, model::PreprocessConfig{});
        benchmark::DoNotOptimize(pre.value().pixel_values.data());
    }
    set_pixel_rate(state);
}

double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// Thread CPU milliseconds of one decode + preprocess (CPU time: the machine is shared).
double decode_preprocess_once() {
    const double start = thread_cpu_ms();
    auto image = io::decode_image(test_jpeg(), {}, "bench.jpg");
    auto pre = model::preprocess_image(image.value(), model::PreprocessConfig{});
    benchmark::DoNotOptimize(pre.value().pixel_values.data());
    return thread_cpu_ms() - start;
}

void BM_decode_preprocess(benchmark::State& state) {
    for (auto _ : state) decode_preprocess_once();
    set_pixel_rate(state);
}

// Runs the PIL script on the same JPEG and reports its median as this row's time (manual
// time), with qvl's median over as many runs, measured right after it, and the ratio; both in
// CPU time.
void BM_pil_numpy(benchmark::State& state) {
    const std::filesystem::path script =
        std::filesystem::path(__FILE__).parent_path() / "image_bench_pil.py";
    const std::filesystem::path jpeg_path =
        std::filesystem::temp_directory_path() / fmt::format("qvl_image_bench_{}.jpg", getpid());
    {
        std::ofstream f(jpeg_path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(test_jpeg().data()),
                std::streamsize(test_jpeg().size()));
    }
    const int runs = 10;
    const std::string cmd = fmt::format("/usr/bin/python3 '{}' --jpeg '{}' --repeat {} 2>&1",
                                        script.string(), jpeg_path.string(), runs);
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[512];
        while (std::fgets(buf, sizeof buf, p)) out += buf;
        pclose(p);
    }
    std::filesystem::remove(jpeg_path);
    const auto at = out.find("\"total_ms\": ");
    if (at == std::string::npos) {
        state.SkipWithError(("PIL script failed: " + out).c_str());
        return;
    }
    const double pil_ms = std::stod(out.substr(at + 12));
    std::vector<double> ours;
    for (int i = 0; i < runs; ++i) ours.push_back(decode_preprocess_once());
    std::nth_element(ours.begin(), ours.begin() + runs / 2, ours.end());
    const double qvl_ms = ours[runs / 2];
    for (auto _ : state) state.SetIterationTime(pil_ms * 1e-3);
    state.counters["pil_ms"] = pil_ms;
    state.counters["qvl_ms"] = qvl_ms;
    state.counters["speedup"] = pil_ms / qvl_ms;
}

BENCHMARK(BM_decode)->Name("image/jpeg_decode/1920x1080")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_preprocess)->Name("image/preprocess/1920x1080")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_decode_preprocess)
    ->Name("image/jpeg_decode+preprocess/1920x1080")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pil_numpy)
    ->Name("image/pil_numpy_decode+preprocess/1920x1080")
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
