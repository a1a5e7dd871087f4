// Video decode + preprocessing per sampled frame (issue 50), next to transformers doing the same
// in the same run, on five 10 s clips made once with Debian's ffmpeg CLI into the working folder
// (not committed), each sampled at the processor's default 2 fps (20 frames) and preprocessed at
// the video defaults:
//   h264_640x360_gop250  testsrc2, x264 defaults (250-frame GOP, 3 B-frames, b-pyramid)
//   phone_1280x720_gop30 testsrc2, x264 high profile, a key frame every second, no B-frames, 6 Mb/s
//   screen_1920x1080     SMPTE bars with a moving square (mostly static), x264 stillimage tune,
//                        a key frame every 2 s
//   vp9_640x360          testsrc2, libvpx-vp9 realtime (3 key frames), WebM
//   gif_320x180_10fps    testsrc2 as an animated GIF
//   intra_640x360        testsrc2, x264 all-intra (every frame a key frame, as some capture and
//                        editing tools write): the case where sampling skips almost everything
// The qvl rows decode with io::load_video (VideoLimits::threads from the row's argument) and
// preprocess with image::preprocess_video. Counters: cpu_ms_per_frame (process CPU, all threads),
// wall_ms_per_frame, decode_cpu_ms (the decode alone, per run), decoded (frames the decoder
// produced: the reference frames sampling needs) and cpu_ms_per_decoded (decode CPU per decoded
// frame). The peer row runs bench/video_bench_hf.py (PyAV + Qwen3VLVideoProcessor, one torch
// thread) with the Python named by QVL_BENCH_PYTHON (a venv with transformers, torch and av);
// without it the row is skipped with a message.
//   QVL_BENCH_PYTHON=VENV/bin/python build/release/bench/qvl-bench-kernels
//   --benchmark_filter=video/
#include <benchmark/benchmark.h>

#include <chrono>
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

struct Clip {
    const char* file;
    const char* ffmpeg;  // input and codec arguments
};

const Clip kClips[] = {
    {"video_bench_h264_640x360_gop250.mp4",
     "-f lavfi -i testsrc2=size=640x360:rate=30:duration=10 -c:v libx264 -pix_fmt yuv420p"},
    {"video_bench_phone_1280x720_gop30.mp4",
     "-f lavfi -i testsrc2=size=1280x720:rate=30:duration=10 -c:v libx264 -pix_fmt yuv420p "
     "-profile:v high -g 30 -bf 0 -b:v 6M"},
    {"video_bench_screen_1920x1080.mp4",
     "-f lavfi -i \"smptehdbars=size=1920x1080:rate=30:duration=10,drawbox=x='mod(t*150,1800)':"
     "y=500:w=24:h=24:color=white:t=fill\" -c:v libx264 -pix_fmt yuv420p -g 60 -tune stillimage"},
    {"video_bench_vp9_640x360.webm",
     "-f lavfi -i testsrc2=size=640x360:rate=30:duration=10 -c:v libvpx-vp9 -pix_fmt yuv420p "
     "-b:v 1M -deadline realtime -cpu-used 8"},
    {"video_bench_gif_320x180_10fps.gif", "-f lavfi -i testsrc2=size=320x180:rate=10:duration=10"},
    {"video_bench_intra_640x360.mp4",
     "-f lavfi -i testsrc2=size=640x360:rate=30:duration=10 -c:v libx264 -pix_fmt yuv420p -g 1"},
};

bool make_clip(const Clip& clip) {
    if (std::filesystem::exists(clip.file)) return true;
    const std::string cmd =
        std::string("ffmpeg -hide_banner -loglevel error -y ") + clip.ffmpeg + " " + clip.file;
    return std::system(cmd.c_str()) == 0;
}

double cpu_ms() { return double(std::clock()) * 1e3 / CLOCKS_PER_SEC; }

void BM_qvl(benchmark::State& state, const Clip& clip) {
    if (!make_clip(clip)) return state.SkipWithError("ffmpeg could not make the clip");
    const image::VideoPreprocessConfig config;
    io::VideoLimits limits;
    limits.threads = int(state.range(0));
    std::size_t frames = 0;
    std::int64_t decoded = 0;
    double decode_ms = 0;
    const double start = cpu_ms();
    const auto wall = std::chrono::steady_clock::now();
    for (auto _ : state) {
        const double t0 = cpu_ms();
        auto video = io::load_video(clip.file, limits, [&](const io::VideoInfo& info) {
            return image::sample_frame_indices(info, config);
        });
        decode_ms += cpu_ms() - t0;
        if (!video.ok()) return state.SkipWithError(video.status().message().c_str());
        auto pre = image::preprocess_video(*video, config);
        if (!pre.ok()) return state.SkipWithError(pre.status().message().c_str());
        frames = video->frames.size();
        decoded = video->decoded_frames;
        benchmark::DoNotOptimize(pre->pixel_values.data());
    }
    const double runs = double(state.iterations());
    const double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count();
    const double n = frames > 0 ? double(frames) : 1;
    state.counters["frames"] = double(frames);
    state.counters["decoded"] = double(decoded);
    state.counters["cpu_ms_per_frame"] = (cpu_ms() - start) / runs / n;
    state.counters["wall_ms_per_frame"] = wall_ms / runs / n;
    state.counters["decode_cpu_ms"] = decode_ms / runs;
    state.counters["cpu_ms_per_decoded"] = decoded > 0 ? decode_ms / runs / double(decoded) : 0;
}

double field(const char* line, const char* key) {
    const char* at = std::strstr(line, key);
    return at != nullptr ? std::atof(at + std::strlen(key)) : 0;
}

void BM_transformers(benchmark::State& state, const Clip& clip) {
    const char* python = std::getenv("QVL_BENCH_PYTHON");
    if (python == nullptr)
        return state.SkipWithError("set QVL_BENCH_PYTHON to a python with transformers and av");
    if (!make_clip(clip)) return state.SkipWithError("ffmpeg could not make the clip");
    const std::string script =
        (std::filesystem::path(QVL_SOURCE_DIR) / "bench" / "video_bench_hf.py").string();
    const std::string cmd =
        std::string(python) + " " + script + " --clip " + clip.file + " --repeat 3 2>/dev/null";
    for (auto _ : state) {
        FILE* pipe = popen(cmd.c_str(), "r");
        if (pipe == nullptr) return state.SkipWithError("cannot run the python peer");
        char line[512] = {};
        const bool got = std::fgets(line, sizeof(line), pipe) != nullptr;
        pclose(pipe);
        if (!got) return state.SkipWithError("the python peer printed nothing");
        const double total_ms = field(line, "\"total_ms\":");
        const double frames = field(line, "\"frames\":");
        state.SetIterationTime(total_ms * 1e-3);
        state.counters["frames"] = frames;
        state.counters["cpu_ms_per_frame"] = frames > 0 ? total_ms / frames : 0;
        state.counters["wall_ms_per_frame"] = frames > 0 ? field(line, "\"wall_ms\":") / frames : 0;
        state.counters["decode_cpu_ms"] = field(line, "\"decode_ms\":");
    }
}

const bool registered = [] {
    for (const Clip& clip : kClips) {
        std::string name = clip.file;
        name = name.substr(std::strlen("video_bench_"));
        name = name.substr(0, name.rfind('.'));
        benchmark::RegisterBenchmark(("video/qvl_decode+preprocess/" + name).c_str(), BM_qvl, clip)
            ->ArgName("threads")
            ->Arg(1)
            ->Arg(2)
            ->Unit(benchmark::kMillisecond)
            ->Iterations(3)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("video/pyav+transformers_decode+preprocess/" + name).c_str(),
                                     BM_transformers, clip)
            ->UseManualTime()
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond);
    }
    return true;
}();

}  // namespace
