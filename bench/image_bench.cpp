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
#include "kernels/image_patch.h"
#include "kernels/isa.h"
#include "kernels/resize.h"
#include "model/image_preprocess.h"
#include "model/image_resize.h"

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

// The kernels alone, per ISA: the vertical pass of 1920x1080 -> 1920x1088, the horizontal pass
// of 3000 -> 3008 pixels wide (2000 rows), the patch gather of 1920x1088. GBps: output bytes.
void BM_resize_vertical(benchmark::State& state, kernels::Isa isa) {
    if (!kernels::isa_supported(isa)) return state.SkipWithError("ISA not supported");
    const io::Image& src = decoded_photo();
    const auto wy = model::detail::bicubic_aa_weights(kHeight, 1088);
    std::vector<std::uint8_t> dst(std::size_t(kWidth) * 3 * 1088);
    for (auto _ : state) {
        kernels::resize_vertical_u8({.src = src.rgb.data(),
                                     .src_stride = kWidth * 3,
                                     .dst = dst.data(),
                                     .dst_stride = kWidth * 3,
                                     .row_bytes = std::size_t(kWidth) * 3,
                                     .out_rows = 1088,
                                     .start = wy.start.data(),
                                     .weights = wy.w.data(),
                                     .taps = wy.taps,
                                     .precision = wy.precision},
                                    isa);
        benchmark::DoNotOptimize(dst.data());
    }
    state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(dst.size()));
}

void BM_resize_horizontal(benchmark::State& state, kernels::Isa isa) {
    if (!kernels::isa_supported(isa)) return state.SkipWithError("ISA not supported");
    constexpr int kIn = 3000, kOut = 3008, kRows = 2000;
    std::vector<std::uint8_t> src(std::size_t(kIn) * 3 * kRows);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::uint8_t(i * 7919 >> 5);
    const auto wx = model::detail::bicubic_aa_weights(kIn, kOut);
    std::vector<std::uint8_t> dst(std::size_t(kOut) * 3 * kRows);
    for (auto _ : state) {
        kernels::resize_horizontal_rgb_u8({.src = src.data(),
                                           .src_stride = kIn * 3,
                                           .dst = dst.data(),
                                           .dst_stride = kOut * 3,
                                           .rows = kRows,
                                           .in_width = kIn,
                                           .out_width = kOut,
                                           .start = wx.start.data(),
                                           .weights = wx.w.data(),
                                           .taps = wx.taps,
                                           .precision = wx.precision},
                                          isa);
        benchmark::DoNotOptimize(dst.data());
    }
    state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(dst.size()));
}

void BM_patch_normalize(benchmark::State& state, kernels::Isa isa) {
    if (!kernels::isa_supported(isa)) return state.SkipWithError("ISA not supported");
    const io::Image& src = decoded_photo();
    const float mean[3] = {127.5f, 127.5f, 127.5f}, std_dev[3] = {127.5f, 127.5f, 127.5f};
    std::vector<float> row(1536);
    for (auto _ : state) {
        // Every patch of the top 1072 rows (67 patch rows x 120), into one L1-resident row.
        for (int py = 0; py < 67; ++py) {
            for (int px = 0; px < kWidth / 16; ++px) {
                kernels::patch_normalize_u8(
                    {.src = src.rgb.data() + (std::size_t(py) * 16 * kWidth + px * 16) * 3,
                     .src_stride = kWidth * 3,
                     .patch = 16,
                     .temporal = 2,
                     .mean = mean,
                     .std_dev = std_dev,
                     .dst = row.data()},
                    isa);
                benchmark::DoNotOptimize(row.data());
            }
        }
    }
    state.SetBytesProcessed(std::int64_t(state.iterations()) * 67 * 120 * 1536 * 4);
}

void register_kernel_benchmarks() {
    for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2}) {
        const std::string name = kernels::isa_name(isa);
        benchmark::RegisterBenchmark(("image/resize_vertical/1920x1080->1088/" + name).c_str(),
                                     BM_resize_vertical, isa)
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("image/resize_horizontal/3000->3008x2000/" + name).c_str(),
                                     BM_resize_horizontal, isa)
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("image/patch_normalize/1920x1072/" + name).c_str(),
                                     BM_patch_normalize, isa)
            ->Unit(benchmark::kMillisecond);
    }
}

const int kRegistered = (register_kernel_benchmarks(), 0);

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
