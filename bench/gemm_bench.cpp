// GEMM/GEMV on the Qwen3-VL-2B shapes: gemm/<shape>/M=<m>/<isa>/threads=<t> (counters GFLOPS and
// pct_peak of the FP32 or BF16 peak this process measured, the ymm FMA peak on avx2 rows) and
// gemv/<shape>/M=<m>/... for m <= 8 (GBps of weight bytes and pct_peak of the measured DRAM read
// bandwidth; the weights rotate over copies larger than the L3, so they come from DRAM as in
// decode). gemm_cold/... rotates the weights the same way for m > 8 (weights from DRAM, as in the
// model). Every row applies its layer's epilogue as the model does (bias, activation, in-place
// residual). avx512 runs kF32 precision, avx512bf16 kBF16 (vdpbf16ps), avx2 kF32. Every linear
// layer's shape reads its weights in the load-time panel layout the model gives them
// (kernels/weight_panels.h); only the patch embedding reads [n, k] bf16 as stored, and
// gemv/lm_head_rows/... the lm_head as stored (the logits screen keeps it so: its full products,
// for sampling without top-k, read it that way).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/bf16.h"
#include "base/thread_pool.h"
#include "bench_peaks.h"
#include "kernels/gemm.h"
#include "kernels/gemm_run.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/patch_embed.h"
#include "kernels/weight_panels.h"
#include "shapes.h"

namespace qvl::bench {
namespace {

using kernels::GemmPrecision;
using kernels::Isa;

base::ThreadPool& pool_for(int threads) {
    static std::unique_ptr<base::ThreadPool> pools[3];
    if (!pools[threads]) pools[threads] = std::make_unique<base::ThreadPool>(threads);
    return *pools[threads];
}

void fill_random(float* p, std::size_t n, std::uint64_t seed, float scale) {
    std::uint64_t s = seed | 1u;
    for (std::size_t i = 0; i < n; ++i) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = scale * (float(s >> 40) * 0x1p-23f - 1.0f);
    }
}

// Activations and weight copies for one (shape, m); kept while consecutive benchmarks (other
// ISAs and thread counts) use the same shape.
struct Fixture {
    const LinearShape* shape = nullptr;
    int m = 0;
    std::vector<float> a, c, bias;
    std::vector<base::AlignedBuffer> weights;  // copies of [n, k] bf16 (x2 when gated)
    bool panels = false;                       // the copies hold panels (text shapes)

    bool cold = false;
    bool rows = false;  // [n, k] rows as stored, even for a text shape
    // Where the weights start in their buffers: rows as stored start where the 2B checkpoint's
    // lm_head does in its safetensors file, 24 bytes past a cache line (the kernels align their
    // loads to lines; a bench on aligned rows would not see what that costs or saves).
    std::size_t offset = 0;

    Fixture(const LinearShape& s, int m_rows, bool cold_w, bool as_rows)
        : shape(&s), m(m_rows), cold(cold_w), rows(as_rows) {
        const std::string name = s.name;
        panels = !rows && name != "vision_patch_embed" && s.n % 16 == 0 && s.k % 2 == 0;
        offset = rows ? 24 : 0;
        a.resize(std::size_t(m) * s.k);
        fill_random(a.data(), a.size(), 17, 1.0f);
        c.resize(std::size_t(m) * s.n);
        fill_random(c.data(), c.size(), 29, 1.0f);  // the residual, added in place
        bias.resize(s.n);
        fill_random(bias.data(), bias.size(), 31, 0.1f);
        const std::size_t bytes = std::size_t(s.n) * s.k * 2 * (s.gated ? 2 : 1);
        std::size_t copies = 1;
        const std::size_t cold_bytes = beyond_cache_bytes();
        if ((m <= kGemvMaxM || cold) && bytes < cold_bytes) {
            copies = (cold_bytes + bytes - 1) / bytes;
        }
        std::vector<float> row(s.k);
        for (std::size_t c_i = 0; c_i < copies; ++c_i) {
            weights.push_back(
                base::AlignedBuffer::allocate(bytes + offset, "bench weights").value());
            auto* w = reinterpret_cast<std::uint16_t*>(weights.back().data() + offset);
            if (c_i > 0) {
                // The copies only keep the reads out of the cache: the same values will do, and a
                // copy is much faster than generating a gigabyte of random bf16.
                std::memcpy(w, weights.front().data() + offset, bytes);
                continue;
            }
            for (std::size_t r = 0; r < bytes / 2 / s.k; ++r) {
                fill_random(row.data(), row.size(), 1000 + r + c_i * 7919, 0.05f);
                for (int kk = 0; kk < s.k; ++kk) w[r * s.k + kk] = base::f32_to_bf16(row[kk]).bits;
            }
            if (panels) {
                // Same byte count (n % 16 == 0, k even): rearranged through a temporary.
                const std::size_t half = std::size_t(s.n) * s.k;
                std::vector<std::uint32_t> tmp(bytes / 4);
                for (int g = 0; g < (s.gated ? 2 : 1); ++g) {
                    kernels::pack_panels(w + g * half, s.k, s.n, s.k, 0, kernels::panel_count(s.n),
                                         tmp.data() + g * half / 2);
                }
                std::memcpy(w, tmp.data(), bytes);
            }
        }
    }
    std::size_t weight_bytes() const { return weights[0].size(); }
};

Fixture& fixture_for(const LinearShape& s, int m, bool cold, bool rows) {
    static std::unique_ptr<Fixture> current;
    if (!current || current->shape != &s || current->m != m || current->cold != cold ||
        current->rows != rows) {
        current.reset();
        current = std::make_unique<Fixture>(s, m, cold, rows);
    }
    return *current;
}

// cold: the weights rotate over copies larger than the L3 for every m (as in the model, where
// each weight matrix is read once per call, from DRAM), not only for the GEMV rows.
void run_linear(benchmark::State& state, const LinearShape* s, int m, Isa isa, int threads,
                bool cold, bool rows) {
    if (!kernels::isa_supported(isa)) {
        state.SkipWithError((std::string("this CPU lacks ") + kernels::isa_name(isa)).c_str());
        return;
    }
    const bool gemv = m <= kGemvMaxM;
    // avx512bf16 rows measure the vdpbf16ps kernels even where the engine prefers FMAs (isa.h):
    // the avx512 rows of the same shape are the FMA kernel.
    kernels::set_bf16_dot_for_gemm(true);
    const GemmPrecision prec = isa == Isa::kAvx512Bf16 ? GemmPrecision::kBF16 : GemmPrecision::kF32;
    const double peak = gemv                           ? dram_read_gbps(threads)
                        : prec == GemmPrecision::kBF16 ? peak_gflops_bf16(threads)
                        : isa == Isa::kAvx2            ? peak_gflops_f32_avx2(threads)
                                                       : peak_gflops_f32(threads);
    Fixture& f = fixture_for(*s, m, cold, rows);
    base::ThreadPool& pool = pool_for(threads);
    const std::size_t half = std::size_t(s->n) * s->k * 2;
    const kernels::WeightType w_type =
        f.panels ? kernels::WeightType::kBF16Panels : kernels::WeightType::kBF16;
    std::size_t iter = 0;
    // As graph::Executor runs them: A packed once for all tasks where they share rows.
    kernels::GemmRunner runner;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
        const std::byte* w = f.weights[iter++ % f.weights.size()].data() + f.offset;
        if (s->gated) {
            const kernels::GemmArgs g{.m = m,
                                      .n = s->n,
                                      .k = s->k,
                                      .a = f.a.data(),
                                      .lda = s->k,
                                      .w = w,
                                      .w_up = w + half,
                                      .ldw = f.panels ? s->k / 2 : s->k,
                                      .w_type = w_type,
                                      .c = f.c.data(),
                                      .ldc = s->n,
                                      .precision = prec};
            runner.run(kernels::kernels_for(isa), g, pool);
        } else {
            // The model's epilogue for this layer: bias, activation, residual added in place.
            const kernels::GemmArgs g{.m = m,
                                      .n = s->n,
                                      .k = s->k,
                                      .a = f.a.data(),
                                      .lda = s->k,
                                      .w = w,
                                      .ldw = f.panels ? s->k / 2 : s->k,
                                      .w_type = w_type,
                                      .bias = s->bias ? f.bias.data() : nullptr,
                                      .act = s->act == 1   ? kernels::GemmActivation::kGeluTanh
                                             : s->act == 2 ? kernels::GemmActivation::kGeluErf
                                                           : kernels::GemmActivation::kNone,
                                      .residual = s->residual ? f.c.data() : nullptr,
                                      .ldr = s->n,
                                      .c = f.c.data(),
                                      .ldc = s->n,
                                      .precision = prec};
            runner.run(kernels::kernels_for(isa), g, pool);
        }
        benchmark::ClobberMemory();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double iters = double(state.iterations());
    if (gemv) {
        const double gbps = double(f.weight_bytes()) * iters / seconds / 1e9;
        state.counters["GBps"] = gbps;
        state.counters["pct_peak"] = peak > 0 ? 100.0 * gbps / peak : 0.0;
    } else {
        const double flops = 2.0 * m * s->n * s->k * (s->gated ? 2 : 1);
        const double gflops = flops * iters / seconds / 1e9;
        state.counters["GFLOPS"] = gflops;
        state.counters["pct_peak"] = peak > 0 ? 100.0 * gflops / peak : 0.0;
    }
}

// The fused patch embedding from RGB bytes (vision_patch_embed's GEMM with the pixel gather).
void run_patch_embed(benchmark::State& state, int height, int width, Isa isa, int threads) {
    if (!kernels::isa_supported(isa)) {
        state.SkipWithError((std::string("this CPU lacks ") + kernels::isa_name(isa)).c_str());
        return;
    }
    // avx512bf16 rows measure the vdpbf16ps kernels even where the engine prefers FMAs (isa.h):
    // the avx512 rows of the same shape are the FMA kernel.
    kernels::set_bf16_dot_for_gemm(true);
    const GemmPrecision prec = isa == Isa::kAvx512Bf16 ? GemmPrecision::kBF16 : GemmPrecision::kF32;
    const double peak = prec == GemmPrecision::kBF16 ? peak_gflops_bf16(threads)
                        : isa == Isa::kAvx2          ? peak_gflops_f32_avx2(threads)
                                                     : peak_gflops_f32(threads);
    constexpr int kOut = 1024, kK = 1536;
    std::vector<std::uint8_t> rgb(std::size_t(height) * width * 3);
    for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = std::uint8_t(i * 2654435761u >> 24);
    float lut[256];
    for (int v = 0; v < 256; ++v) lut[v] = v / 127.5f - 1.0f;
    std::vector<float> wf(std::size_t(kOut) * kK), bias(kOut);
    fill_random(wf.data(), wf.size(), 5, 0.05f);
    fill_random(bias.data(), bias.size(), 6, 0.1f);
    std::vector<std::uint16_t> w(wf.size());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = base::f32_to_bf16(wf[i]).bits;
    const int n_patches = (height / 16) * (width / 16);
    std::vector<float> out(std::size_t(n_patches) * kOut);
    const kernels::PatchEmbedArgs args{.rgb = rgb.data(),
                                       .height = height,
                                       .width = width,
                                       .lut = lut,
                                       .w = w.data(),
                                       .ldw = kK,
                                       .bias = bias.data(),
                                       .out = out.data(),
                                       .ld_out = kOut,
                                       .out_dim = kOut,
                                       .precision = prec};
    base::ThreadPool& pool = pool_for(threads);
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
        const int nt = kernels::patch_embed_num_tasks(args, threads);
        pool.parallel_for(nt,
                          [&](int t) { kernels::kernels_for(isa).patch_embed_task(args, t, nt); });
        benchmark::ClobberMemory();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double gflops = 2.0 * n_patches * kOut * kK * double(state.iterations()) / seconds / 1e9;
    state.counters["GFLOPS"] = gflops;
    state.counters["pct_peak"] = peak > 0 ? 100.0 * gflops / peak : 0.0;
}

void register_one(const LinearShape& s, int m, Isa isa, int threads, bool cold = false,
                  bool rows = false) {
    const std::string name = std::string(m <= kGemvMaxM ? "gemv/"
                                         : cold         ? "gemm_cold/"
                                                        : "gemm/") +
                             s.name + (rows ? "_rows" : "") + "/M=" + std::to_string(m) + "/" +
                             kernels::isa_name(isa) + "/threads=" + std::to_string(threads);
    benchmark::RegisterBenchmark(name.c_str(), run_linear, &s, m, isa, threads, cold, rows)
        ->UseRealTime()
        ->MinTime(0.1)
        ->Unit(benchmark::kMillisecond);
}

// The tiers measured on every shape: both AVX-512 paths (f32 and bf16 products) where the CPU
// has AVX-512, else the AVX2 tier, which is then what the model runs. QVL_ISA=avx2 (as for
// qvl-run) measures the AVX2 tier on every shape on an AVX-512 machine too: what an AVX2-only
// CPU runs.
std::vector<Isa> main_isas() {
    const char* env = std::getenv("QVL_ISA");
    Isa requested{};
    if (env != nullptr && kernels::parse_isa(env, &requested) && requested == Isa::kAvx2) {
        return {Isa::kAvx2};
    }
    if (kernels::isa_supported(Isa::kAvx512)) return {Isa::kAvx512, Isa::kAvx512Bf16};
    return {Isa::kAvx2};
}

int register_all() {
    const std::vector<Isa> isas = main_isas();
    const bool avx512 = isas.front() != Isa::kAvx2;
    for (const LinearShape& s : linear_shapes()) {
        for (int m : linear_ms(s)) {
            const std::string name = s.name;
            for (Isa isa : isas) {
                for (int threads : {1, 2}) register_one(s, m, isa, threads);
                // lm_head as the logits screen keeps it (rows as stored), next to its panels.
                if (name == "lm_head") {
                    for (int threads : {1, 2}) register_one(s, m, isa, threads, false, true);
                }
            }
            // The AVX2 fallback on a few representative shapes, next to the AVX-512 rows.
            if (avx512 && ((name == "text_gate_up" && m == 212) ||
                           (name == "vision_fc1" && m == 784) || (name == "text_q" && m == 1))) {
                for (int threads : {1, 2}) register_one(s, m, Isa::kAvx2, threads);
            }
            // Weights from DRAM, as in the model, on the GEMM shapes that dominate it.
            if ((name == "text_gate_up" || name == "text_down" || name == "vision_qkv" ||
                 name == "vision_fc2") &&
                m > 8 && m < 1000) {
                for (Isa isa : isas) {
                    for (int threads : {1, 2}) register_one(s, m, isa, threads, true);
                }
            }
        }
    }
    for (auto [h, w] : {std::pair{448, 448}, std::pair{704, 1280}}) {
        for (Isa isa : isas) {
            for (int threads : {1, 2}) {
                const std::string name =
                    "patch_embed/" + std::to_string(w) + "x" + std::to_string(h) +
                    "/M=" + std::to_string((h / 16) * (w / 16)) + "/" + kernels::isa_name(isa) +
                    "/threads=" + std::to_string(threads);
                benchmark::RegisterBenchmark(name.c_str(), run_patch_embed, h, w, isa, threads)
                    ->UseRealTime()
                    ->MinTime(0.1)
                    ->Unit(benchmark::kMillisecond);
            }
        }
    }
    return 0;
}

const int kRegistered = register_all();

}  // namespace
}  // namespace qvl::bench
