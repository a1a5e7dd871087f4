// Image input benchmarks: decode a 1920x1080 JPEG, preprocess it into pixel_values (smart_resize
// to 1920x1088, bicubic resize, normalise, patchify), and both together, each cold (fresh
// buffers per call, as one CLI run) and warm (buffers reused, as a server with decode_image_into
// and preprocess_image_into); plus the same steps in PIL + numpy (bench/image_bench_pil.py, run
// from here so that both are measured in the same run). The JPEG is synthesised at start-up
// (deterministic: smooth gradients, texture, edges; quality 90, 4:2:0), so no large file is
// committed.
//   qvl-bench-kernels --benchmark_filter='^image/'
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "image/image_preprocess.h"
#include "image/image_resize.h"
#include "io/image.h"
#include "io/image_decoders.h"
#include "kernels/image_patch.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/resize.h"

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

double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

long thread_minor_faults() {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt;
}

// What the pipeline rows run. Cold: fresh outputs every call, destroyed after it (their memory
// goes back to the kernel, as in one CLI run); warm: outputs reused across calls (a server).
// kBothNoPixels is what qvl-run does: decode + resize, without pixel_values (the vision tower
// gathers its patches from the resized image).
enum class Stage { kDecode, kPreprocess, kBoth, kBothNoPixels };

struct Pipeline {
    io::Image image;  // warm outputs
    image::PreprocessedImage pre;

    void run(Stage stage, bool warm) {
        image::PreprocessConfig config;
        config.pixel_values = stage != Stage::kBothNoPixels;
        if (stage == Stage::kPreprocess) {
            if (warm) {
                check(image::preprocess_image_into(decoded_photo(), config, &pre));
                benchmark::DoNotOptimize(pre.pixel_values.data());
            } else {
                auto fresh = image::preprocess_image(decoded_photo(), config);
                benchmark::DoNotOptimize(fresh.value().pixel_values.data());
            }
            return;
        }
        if (warm) {
            check(io::decode_image_into(test_jpeg(), {}, "bench.jpg", &image));
            if (stage != Stage::kDecode) check(image::preprocess_image_into(image, config, &pre));
            benchmark::DoNotOptimize(image.rgb.data());
            benchmark::DoNotOptimize(pre.pixel_values.data());
            return;
        }
        auto fresh = io::decode_image(test_jpeg(), {}, "bench.jpg");
        benchmark::DoNotOptimize(fresh.value().rgb.data());
        if (stage != Stage::kDecode) {
            auto fresh_pre = image::preprocess_image(fresh.value(), config);
            benchmark::DoNotOptimize(fresh_pre.value().pixel_values.data());
        }
    }

    static void check(const base::Status& status) {
        if (!status.ok()) {
            std::fprintf(stderr, "%s\n", status.message().c_str());
            std::abort();
        }
    }
};

// Glibc's malloc raises its mmap threshold (up to 32 MiB) after a large block is freed, so a
// freed 6 MB image would come back from the heap with its pages still mapped: not what one CLI
// run sees. Pinning the threshold keeps every large buffer a fresh mapping. Set once, before any
// cold row; it only changes where later large blocks of this process come from.
void pin_mmap_threshold() {
    static const bool pinned = mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1;
    benchmark::DoNotOptimize(pinned);
}

// minflt: page faults per call (thread CPU time is what Time/CPU report for these rows).
void BM_pipeline(benchmark::State& state, Stage stage, bool warm) {
    pin_mmap_threshold();
    Pipeline p;
    decoded_photo();
    if (warm) p.run(stage, true);  // the first call sizes the buffers
    const long faults = thread_minor_faults();
    for (auto _ : state) p.run(stage, warm);
    state.counters["minflt"] = benchmark::Counter(double(thread_minor_faults() - faults),
                                                  benchmark::Counter::kAvgIterations);
    state.counters["MPixps"] = benchmark::Counter(double(kWidth) * kHeight * 1e-6,
                                                  benchmark::Counter::kIsIterationInvariantRate);
    if (stage != Stage::kPreprocess) state.counters["jpeg_KiB"] = double(test_jpeg().size()) / 1024;
}

// Median thread CPU milliseconds of `runs` decode + preprocess calls (CPU time: the machine is
// shared), cold or warm.
double median_ms(Pipeline& p, Stage stage, bool warm, int runs) {
    std::vector<double> ms;
    if (warm) p.run(stage, true);
    for (int i = 0; i < runs; ++i) {
        const double start = thread_cpu_ms();
        p.run(stage, warm);
        ms.push_back(thread_cpu_ms() - start);
    }
    std::nth_element(ms.begin(), ms.begin() + runs / 2, ms.end());
    return ms[runs / 2];
}

// Runs the PIL script on the same JPEG and reports its median as this row's time (manual
// time), with qvl's medians over as many runs, cold and warm, measured right after it, and the
// ratios; all in CPU time. pil_decode_ms is PIL's open + convert alone. speedup_bound =
// pil_ms / qvl_decode_ms (warm decode alone) is the most any preprocessing speed could give:
// the decode stays (libjpeg-turbo with the exact settings the reference uses, as PIL does).
void BM_pil_numpy(benchmark::State& state) {
    pin_mmap_threshold();
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
    const auto total_at = out.find("\"total_ms\": ");
    const auto decode_at = out.find("\"decode_ms\": ");
    if (total_at == std::string::npos || decode_at == std::string::npos) {
        state.SkipWithError(("PIL script failed: " + out).c_str());
        return;
    }
    const double pil_ms = std::stod(out.substr(total_at + 12));
    const double pil_decode_ms = std::stod(out.substr(decode_at + 13));
    Pipeline p;
    const double cold_ms = median_ms(p, Stage::kBoth, false, runs);
    const double warm_ms = median_ms(p, Stage::kBoth, true, runs);
    const double decode_ms = median_ms(p, Stage::kDecode, true, runs);
    for (auto _ : state) state.SetIterationTime(pil_ms * 1e-3);
    state.counters["pil_ms"] = pil_ms;
    state.counters["pil_decode_ms"] = pil_decode_ms;
    state.counters["qvl_cold_ms"] = cold_ms;
    state.counters["qvl_warm_ms"] = warm_ms;
    state.counters["qvl_decode_ms"] = decode_ms;
    state.counters["speedup_cold"] = pil_ms / cold_ms;
    state.counters["speedup_warm"] = pil_ms / warm_ms;
    state.counters["speedup_bound"] = pil_ms / decode_ms;
}

// The kernels alone, per ISA: the vertical pass of 1920x1080 -> 1920x1088, the horizontal pass
// of 3000 -> 3008 pixels wide (2000 rows), the patch gather of 1920x1088. GBps: output bytes.
void BM_resize_vertical(benchmark::State& state, kernels::Isa isa) {
    if (!kernels::isa_supported(isa)) return state.SkipWithError("ISA not supported");
    const io::Image& src = decoded_photo();
    const auto wy = image::detail::bicubic_aa_weights(kHeight, 1088);
    std::vector<std::uint8_t> dst(std::size_t(kWidth) * 3 * 1088);
    for (auto _ : state) {
        kernels::kernels_for(isa).resize_vertical_u8({.src = src.rgb.data(),
                                                      .src_stride = kWidth * 3,
                                                      .dst = dst.data(),
                                                      .dst_stride = kWidth * 3,
                                                      .row_bytes = std::size_t(kWidth) * 3,
                                                      .out_rows = 1088,
                                                      .start = wy.start.data(),
                                                      .weights = wy.w.data(),
                                                      .taps = wy.taps,
                                                      .precision = wy.precision});
        benchmark::DoNotOptimize(dst.data());
    }
    state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(dst.size()));
}

void BM_resize_horizontal(benchmark::State& state, kernels::Isa isa) {
    if (!kernels::isa_supported(isa)) return state.SkipWithError("ISA not supported");
    constexpr int kIn = 3000, kOut = 3008, kRows = 2000;
    std::vector<std::uint8_t> src(std::size_t(kIn) * 3 * kRows);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::uint8_t(i * 7919 >> 5);
    const auto wx = image::detail::bicubic_aa_weights(kIn, kOut);
    std::vector<std::uint8_t> dst(std::size_t(kOut) * 3 * kRows);
    for (auto _ : state) {
        kernels::kernels_for(isa).resize_horizontal_rgb_u8({.src = src.data(),
                                                            .src_stride = kIn * 3,
                                                            .dst = dst.data(),
                                                            .dst_stride = kOut * 3,
                                                            .rows = kRows,
                                                            .in_width = kIn,
                                                            .out_width = kOut,
                                                            .start = wx.start.data(),
                                                            .weights = wx.w.data(),
                                                            .taps = wx.taps,
                                                            .precision = wx.precision});
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
                kernels::kernels_for(isa).patch_normalize_u8(
                    {.src = src.rgb.data() + (std::size_t(py) * 16 * kWidth + px * 16) * 3,
                     .src_stride = kWidth * 3,
                     .patch = 16,
                     .temporal = 2,
                     .mean = mean,
                     .std_dev = std_dev,
                     .dst = row.data()});
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

void register_pipeline_benchmarks() {
    for (const auto& [stage, name] :
         {std::pair{Stage::kDecode, "jpeg_decode"}, std::pair{Stage::kPreprocess, "preprocess"},
          std::pair{Stage::kBoth, "jpeg_decode+preprocess"},
          std::pair{Stage::kBothNoPixels, "jpeg_decode+resize"}}) {
        for (bool warm : {false, true}) {
            benchmark::RegisterBenchmark(
                fmt::format("image/{}/1920x1080/{}", name, warm ? "warm" : "cold").c_str(),
                BM_pipeline, stage, warm)
                ->Unit(benchmark::kMillisecond);
        }
    }
}

const int kRegisteredPipeline = (register_pipeline_benchmarks(), 0);

BENCHMARK(BM_pil_numpy)
    ->Name("image/pil_numpy_decode+preprocess/1920x1080")
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
