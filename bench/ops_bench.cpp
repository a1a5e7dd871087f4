// Norms, RoPE, activations and softmax on Qwen3-VL-2B shapes, one thread (the kernels are
// single-threaded; callers split rows). Counter GBps = bytes the kernel must read and write
// per call (f32), over wall time; pct_peak compares with the DRAM read bandwidth measured in the
// same process when bench_peaks.h is present.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/activation.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/norm.h"
#include "kernels/rope.h"
#include "kernels/softmax.h"
#if __has_include("bench_peaks.h")
#include "bench_peaks.h"
#define QVL_HAVE_BENCH_PEAKS 1
#endif

namespace qvl {
namespace {

using kernels::Isa;
using kernels::VectorKernels;

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

void report(benchmark::State& state, double bytes) {
    state.counters["GBps"] =
        benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
#ifdef QVL_HAVE_BENCH_PEAKS
    state.counters["pct_peak"] = benchmark::Counter(100.0 * bytes * 1e-9 / bench::dram_read_gbps(1),
                                                    benchmark::Counter::kIsIterationInvariantRate);
#endif
}

// One benchmark: `setup` returns the callable and the bytes it touches per call.
struct Case {
    std::string name;
    std::function<std::pair<std::function<void(Isa)>, double>()> setup;
};

// One benchmark's setup: the callable and the bytes it touches per call.
using Setup = std::function<std::pair<std::function<void(Isa)>, double>()>;

Setup layer_norm(int rows, int dim) {
    return [rows, dim] {
        auto x = std::make_shared<std::vector<float>>(random_floats(std::size_t(rows) * dim, 1));
        auto w = std::make_shared<std::vector<float>>(random_floats(dim, 2));
        auto b = std::make_shared<std::vector<float>>(random_floats(dim, 3));
        auto y = std::make_shared<std::vector<float>>(std::size_t(rows) * dim);
        std::function<void(Isa)> fn = [=](Isa isa) {
            kernels::kernels_for(isa).layer_norm_f32({.x = x->data(),
                                                      .x_stride = dim,
                                                      .w = w->data(),
                                                      .b = b->data(),
                                                      .y = y->data(),
                                                      .y_stride = dim,
                                                      .rows = rows,
                                                      .dim = dim,
                                                      .eps = 1e-6f});
        };
        return std::pair{fn, 8.0 * rows * dim};
    };
}

Setup rms_norm(int rows, int dim) {
    return [rows, dim] {
        auto x = std::make_shared<std::vector<float>>(random_floats(std::size_t(rows) * dim, 1));
        auto w = std::make_shared<std::vector<float>>(random_floats(dim, 2));
        std::function<void(Isa)> fn = [=](Isa isa) {
            kernels::kernels_for(isa).rms_norm_f32({.x = x->data(),
                                                    .x_stride = dim,
                                                    .w = w->data(),
                                                    .y = x->data(),
                                                    .y_stride = dim,
                                                    .rows = rows,
                                                    .dim = dim,
                                                    .eps = 1e-6f});
        };
        return std::pair{fn, 8.0 * rows * dim};
    };
}

Setup rope(int rows, int heads, int hd) {
    return [rows, heads, hd] {
        const int half = hd / 2;
        auto x =
            std::make_shared<std::vector<float>>(random_floats(std::size_t(rows) * heads * hd, 1));
        auto cs = std::make_shared<std::vector<float>>(random_floats(std::size_t(rows) * half, 2));
        auto sn = std::make_shared<std::vector<float>>(random_floats(std::size_t(rows) * half, 3));
        std::function<void(Isa)> fn = [=](Isa isa) {
            kernels::kernels_for(isa).rope_f32({.x = x->data(),
                                                .x_stride = heads * hd,
                                                .rows = rows,
                                                .n_heads = heads,
                                                .head_dim = hd,
                                                .cos = cs->data(),
                                                .sin = sn->data(),
                                                .cs_stride = half});
        };
        return std::pair{fn, 8.0 * rows * heads * hd + 8.0 * rows * half};
    };
}

Setup unary(auto VectorKernels::*f, std::int64_t n) {
    return [f, n] {
        auto x = std::make_shared<std::vector<float>>(random_floats(n, 1));
        auto y = std::make_shared<std::vector<float>>(n);
        std::function<void(Isa)> fn = [=](Isa isa) {
            (kernels::kernels_for(isa).*f)(x->data(), y->data(), n);
        };
        return std::pair{fn, 8.0 * n};
    };
}

Setup binary(auto VectorKernels::*f, std::int64_t n) {
    return [f, n] {
        auto a = std::make_shared<std::vector<float>>(random_floats(n, 1));
        auto b = std::make_shared<std::vector<float>>(random_floats(n, 2));
        auto y = std::make_shared<std::vector<float>>(n);
        std::function<void(Isa)> fn = [=](Isa isa) {
            (kernels::kernels_for(isa).*f)(a->data(), b->data(), y->data(), n);
        };
        return std::pair{fn, 12.0 * n};
    };
}

std::vector<Case> cases() {
    std::vector<Case> c;
    c.push_back({"norm/layer_norm_1024/M=784", layer_norm(784, 1024)});
    c.push_back({"norm/layer_norm_4096/M=196", layer_norm(196, 4096)});
    c.push_back({"norm/rms_norm_2048/M=212", rms_norm(212, 2048)});
    c.push_back({"norm/rms_norm_heads_128/M=212", rms_norm(212 * 16, 128)});
    c.push_back({"rope/vision_q/M=784", rope(784, 16, 64)});
    c.push_back({"rope/text_q/M=212", rope(212, 16, 128)});
    c.push_back({"act/gelu_tanh/M=784", unary(&VectorKernels::gelu_tanh_f32, 784LL * 4096)});
    c.push_back({"act/gelu_erf/M=196", unary(&VectorKernels::gelu_erf_f32, 196LL * 4096)});
    c.push_back({"act/silu_mul/M=212", binary(&VectorKernels::silu_mul_f32, 212LL * 6144)});
    c.push_back({"act/add/M=784", binary(&VectorKernels::add_f32, 784LL * 1024)});
    c.push_back({"softmax/rows_784/M=784", [] {
                     auto x = std::make_shared<std::vector<float>>(random_floats(784 * 784, 1));
                     std::function<void(Isa)> fn = [=](Isa isa) {
                         kernels::kernels_for(isa).softmax_f32(x->data(), 784, 784, 784);
                     };
                     return std::pair{fn, 8.0 * 784 * 784};
                 }});
    return c;
}

int register_all() {
    for (const Case& c : cases()) {
        for (Isa isa : kernels::all_isas()) {
            if (!kernels::isa_supported(isa)) continue;
            benchmark::RegisterBenchmark((c.name + "/" + kernels::isa_name(isa)).c_str(),
                                         [c, isa](benchmark::State& state) {
                                             auto [fn, bytes] = c.setup();
                                             for (auto _ : state) {
                                                 fn(isa);
                                                 benchmark::ClobberMemory();
                                             }
                                             report(state, bytes);
                                         })
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime()
                ->MinTime(0.1);
        }
    }
    return 0;
}

const int registered = register_all();

}  // namespace
}  // namespace qvl
