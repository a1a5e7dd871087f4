// Video decode + preprocessing per sampled frame (issue 50), next to transformers doing the same
// in the same run: a 10 s 640x360 30 fps H.264 clip (made once with Debian's ffmpeg CLI into the
// working folder), sampled at the processor's default 2 fps (20 frames), decoded with
// io::load_video and preprocessed with image::preprocess_video at the video defaults. The peer
// row runs bench/video_bench_hf.py (PyAV + Qwen3VLVideoProcessor, one torch thread) with the
// Python named by QVL_BENCH_PYTHON (a venv with transformers, torch and av); without it the row
// is skipped with a message.
//   QVL_BENCH_PYTHON=VENV/bin/python build/release/bench/qvl-bench-kernels
//   --benchmark_filter=video/
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>

#include "image/video_preprocess.h"
#include "io/video.h"

namespace {

using namespace qvl;

const char* kClip = "video_bench_640x360_30fps_10s.mp4";

bool make_clip() {
    if (std::filesystem::exists(kClip)) return true;
    const std::string cmd = std::string(
                                "ffmpeg -hide_banner -loglevel error -y -f lavfi -i "
                                "testsrc2=size=640x360:rate=30:duration=10 -c:v libx264 "
                                "-pix_fmt yuv420p ") +
                            kClip;
    return std::system(cmd.c_str()) == 0;
}

void BM_qvl(benchmark::State& state) {
    if (!make_clip()) return state.SkipWithError("ffmpeg could not make the clip");
    const image::VideoPreprocessConfig config;
    std::size_t frames = 0;
    const std::clock_t start = std::clock();
    for (auto _ : state) {
        auto video = io::load_video(kClip, {}, [&](const io::VideoInfo& info) {
            return image::sample_frame_indices(info, config);
        });
        if (!video.ok()) return state.SkipWithError(video.status().message().c_str());
        auto pre = image::preprocess_video(*video, config);
        if (!pre.ok()) return state.SkipWithError(pre.status().message().c_str());
        frames = video->frames.size();
        benchmark::DoNotOptimize(pre->pixel_values.data());
    }
    // Process CPU time, as the peer row reports it (a loaded machine counts against neither).
    const double cpu_ms = double(std::clock() - start) * 1e3 / CLOCKS_PER_SEC;
    state.counters["frames"] = double(frames);
    state.counters["cpu_ms_per_frame"] =
        frames > 0 ? cpu_ms / double(state.iterations()) / double(frames) : 0;
}

void BM_transformers(benchmark::State& state) {
    const char* python = std::getenv("QVL_BENCH_PYTHON");
    if (python == nullptr)
        return state.SkipWithError("set QVL_BENCH_PYTHON to a python with transformers and av");
    if (!make_clip()) return state.SkipWithError("ffmpeg could not make the clip");
    const std::string script =
        (std::filesystem::path(QVL_SOURCE_DIR) / "bench" / "video_bench_hf.py").string();
    const std::string cmd =
        std::string(python) + " " + script + " --clip " + kClip + " --repeat 5 2>/dev/null";
    for (auto _ : state) {
        FILE* pipe = popen(cmd.c_str(), "r");
        if (pipe == nullptr) return state.SkipWithError("cannot run the python peer");
        char line[512] = {};
        const bool got = std::fgets(line, sizeof(line), pipe) != nullptr;
        pclose(pipe);
        if (!got) return state.SkipWithError("the python peer printed nothing");
        // {"total_ms": X, "frames": N, ...}
        const double total_ms = std::atof(std::strstr(line, ":") + 1);
        const char* f = std::strstr(line, "\"frames\":");
        const double frames = f != nullptr ? std::atof(f + 9) : 0;
        state.SetIterationTime(total_ms * 1e-3);
        state.counters["frames"] = frames;
        state.counters["cpu_ms_per_frame"] = frames > 0 ? total_ms / frames : 0;
    }
}

}  // namespace

BENCHMARK(BM_qvl)
    ->Name("video/qvl_decode+preprocess/640x360x10s_2fps")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK(BM_transformers)
    ->Name("video/pyav+transformers_decode+preprocess/640x360x10s_2fps")
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
