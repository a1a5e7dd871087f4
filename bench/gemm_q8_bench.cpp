// Int8- and 4-bit-weight GEMV/GEMM (kernels/gemm_q8.h, gemm_q4.h: one driver, two weight
// layouts) on the text decoder's shapes: gemv_q8/<shape>/M=<m>/
// <isa>/threads=<t> (decode: GBps of int8 weights + scales streamed, pct_peak of the DRAM read
// bandwidth this process measured; weights rotate over copies larger than the L3) and
// gemm_q8/<shape>/M=212/<isa> /threads=2 (prefill: GOPS, pct_peak of an int8 peak estimated as 2x
// the measured BF16 peak on the VNNI tier — vpdpbusd does twice vdpbf16ps's products — and 2x the
// ymm FP32 peak on AVX2). The <isa>_fma rows run the AVX2 tier's products on f32 FMAs
// (kernels/isa.h q8_fma_for_gemm), whose peak is the FP32 one; the plain rows force its int8
// kernel. gemv_q4/ and gemm_q4/ rows are the same with 4-bit weights in the shipped groups of 32
// (GBps then counts the nibbles and half scales actually streamed). gemm_q8_rowblock/ rows are
// the int8 vision tower's products (one scale per output channel and activation row).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_pool.h"
#include "bench_peaks.h"
#include "kernels/gemm.h"
#include "kernels/gemm_q4.h"
#include "kernels/gemm_q8.h"
#include "kernels/gemm_run.h"
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "shapes.h"

namespace qvl::bench {
namespace {

using kernels::Isa;

constexpr int kPrefillThreads = 2;
constexpr int kBlock = 64;    // the int8 text weights' block (model/quantize.h)
constexpr int kBlockQ4 = 32;  // the 4-bit text weights' block

// One quantized matrix (int8 or 4-bit) with its own storage.
struct Q8Copy {
    std::vector<std::uint8_t> q;
    std::vector<std::uint8_t> s;
    kernels::Q8Matrix m;
    void point() {
        if (m.bits == 4) {
            m.q = reinterpret_cast<const std::int8_t*>(q.data());
            m.scales_f16 = reinterpret_cast<const std::uint16_t*>(s.data());
        } else {
            m.q = reinterpret_cast<const std::int8_t*>(q.data());
            m.scales = reinterpret_cast<const float*>(s.data());
        }
    }
};

// Gate and up (or the single matrix) quantized once, then copied so that the rotation over
// `copies` exceeds the L3.
struct Q8Fixture {
    std::vector<std::unique_ptr<Q8Copy>> w, w2;
    std::vector<float> a, c;
    std::size_t bytes = 0;  // weight bytes read per call
};

std::unique_ptr<Q8Copy> quantized(int n, int k, unsigned seed, int bits, int block) {
    std::vector<float> src(std::size_t(n) * k);
    std::uint32_t x = seed * 2654435761u + 1;
    for (float& v : src) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        v = float(std::int32_t(x)) * 0x1p-31f * 0.05f;
    }
    auto c = std::make_unique<Q8Copy>();
    if (bits == 4) {
        c->q.resize(kernels::q4_data_bytes(n, k, block));
        c->s.resize(kernels::q4_scale_bytes(n, k, block));
        c->m = kernels::q4_describe(n, k, block, c->q.data(),
                                    reinterpret_cast<std::uint16_t*>(c->s.data()));
        kernels::q4_quantize_panels(src.data(), kernels::WeightType::kF32, k, c->m, 0, c->m.panels);
    } else {
        c->q.resize(kernels::q8_data_bytes(n, k, block));
        c->s.resize(kernels::q8_scale_bytes(n, k, block));
        c->m = kernels::q8_describe(n, k, block, reinterpret_cast<std::int8_t*>(c->q.data()),
                                    reinterpret_cast<float*>(c->s.data()));
        kernels::q8_quantize_panels(src.data(), kernels::WeightType::kF32, k, c->m, 0, c->m.panels);
    }
    return c;
}

std::unique_ptr<Q8Copy> copy_of(const Q8Copy& from) {
    auto c = std::make_unique<Q8Copy>();
    c->q = from.q;
    c->s = from.s;
    c->m = from.m;
    c->point();
    return c;
}

Q8Fixture& fixture_for(const LinearShape& s, int m, int bits, int block) {
    static std::unique_ptr<Q8Fixture> current;
    static const LinearShape* current_shape = nullptr;
    static int current_m = -1, current_bits = 0, current_block = 0;
    if (current_shape == &s && current_m == m && current_bits == bits && current_block == block)
        return *current;
    current.reset();
    auto f = std::make_unique<Q8Fixture>();
    f->w.push_back(quantized(s.n, s.k, 1, bits, block));
    if (s.gated) f->w2.push_back(quantized(s.n, s.k, 2, bits, block));
    f->bytes = (f->w[0]->q.size() + f->w[0]->s.size()) * (s.gated ? 2 : 1);
    const int copies =
        m <= 32 ? int(std::max<std::size_t>(1, beyond_cache_bytes() / f->bytes + 1)) : 1;
    for (int i = 1; i < copies; ++i) {
        f->w.push_back(copy_of(*f->w[0]));
        if (s.gated) f->w2.push_back(copy_of(*f->w2[0]));
    }
    f->a.resize(std::size_t(m) * s.k);
    std::uint32_t x = 7;
    for (float& v : f->a) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        v = float(std::int32_t(x)) * 0x1p-31f;
    }
    f->c.assign(std::size_t(m) * s.n, 0.0f);
    current = std::move(f);
    current_shape = &s;
    current_m = m;
    current_bits = bits;
    current_block = block;
    return *current;
}

base::ThreadPool& pool_for(int threads) {
    static std::unique_ptr<base::ThreadPool> pools[3];
    if (!pools[threads]) pools[threads] = std::make_unique<base::ThreadPool>(threads);
    return *pools[threads];
}

// block 0: the text decoder's (64 for int8, 32 for 4 bits); else the block given (the vision
// tower's row-long blocks, q8_row_block).
void run_q8(benchmark::State& state, const LinearShape* s, int m, Isa isa, bool fma, int threads,
            int bits, int block) {
    if (!kernels::isa_supported(isa)) {
        state.SkipWithError((std::string("this CPU lacks ") + kernels::isa_name(isa)).c_str());
        return;
    }
    // Both AVX2 kernels on any CPU (kernels/isa.h q8_fma_for_gemm); GEMV rows use the int8 one.
    kernels::set_q8_fma_for_gemm(fma);
    const bool gemv = m <= 32;
    const double peak = gemv ? dram_read_gbps(threads)
                        : isa == Isa::kAvx512Bf16
                            ? 2.0 * peak_gflops_bf16(threads)
                            : (fma ? 1.0 : 2.0) * peak_gflops_f32_avx2(threads);
    Q8Fixture& f = fixture_for(*s, m, bits, block != 0 ? block : bits == 4 ? kBlockQ4 : kBlock);
    base::ThreadPool& pool = pool_for(threads);
    // As the engine runs a product (graph::Executor): activations quantized once, shared by
    // the column tasks.
    static kernels::GemmRunner runner;
    std::size_t iter = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
        const std::size_t i = iter++ % f.w.size();
        if (s->gated) {
            const kernels::GemmArgs g{.m = m,
                                      .n = s->n,
                                      .k = s->k,
                                      .a = f.a.data(),
                                      .lda = s->k,
                                      .w = &f.w[i]->m,
                                      .w_up = &f.w2[i]->m,
                                      .w_type = kernels::WeightType::kQ8,
                                      .c = f.c.data(),
                                      .ldc = s->n};
            runner.run(kernels::kernels_for(isa), g, pool);
        } else {
            const kernels::GemmArgs g{.m = m,
                                      .n = s->n,
                                      .k = s->k,
                                      .a = f.a.data(),
                                      .lda = s->k,
                                      .w = &f.w[i]->m,
                                      .w_type = kernels::WeightType::kQ8,
                                      .residual = s->residual ? f.c.data() : nullptr,
                                      .ldr = s->n,
                                      .c = f.c.data(),
                                      .ldc = s->n};
            runner.run(kernels::kernels_for(isa), g, pool);
        }
        benchmark::ClobberMemory();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double iters = double(state.iterations());
    if (gemv) {
        const double gbps = double(f.bytes) * iters / seconds / 1e9;
        state.counters["GBps"] = gbps;
        state.counters["pct_peak"] = peak > 0 ? 100.0 * gbps / peak : 0.0;
    } else {
        const double gops = 2.0 * m * s->n * s->k * (s->gated ? 2 : 1) * iters / seconds / 1e9;
        state.counters["GOPS"] = gops;
        state.counters["pct_peak"] = peak > 0 ? 100.0 * gops / peak : 0.0;
    }
}

int register_q8() {
    std::vector<Isa> isas = {Isa::kAvx2};
    if (kernels::isa_supported(Isa::kAvx512Bf16)) isas.push_back(Isa::kAvx512Bf16);
    for (const int bits : {8, 4}) {
        for (const LinearShape& s : kLinearShapes) {
            if (s.vision) continue;
            for (int m : {1, 2, 3, 4, 8, 212}) {
                for (Isa isa : isas) {
                    for (const bool fma : {false, true}) {
                        // The f32-FMA products serve int8 weights only.
                        if (fma && (isa != Isa::kAvx2 || m <= 32 || bits == 4)) continue;
                        const bool gemv = m <= 32;
                        for (int threads : {1, 2}) {
                            if (!gemv && threads != kPrefillThreads) continue;
                            const std::string name = std::string(gemv ? "gemv_q" : "gemm_q") +
                                                     std::to_string(bits) + "/" + s.name +
                                                     "/M=" + std::to_string(m) + "/" +
                                                     kernels::isa_name(isa) + (fma ? "_fma" : "") +
                                                     "/threads=" + std::to_string(threads);
                            benchmark::RegisterBenchmark(name.c_str(), run_q8, &s, m, isa, fma,
                                                         threads, bits, 0)
                                ->UseRealTime()
                                ->MinTime(0.1)
                                ->Unit(benchmark::kMillisecond);
                        }
                    }
                }
            }
        }
    }
    return 0;
}

// The int8 vision tower (--vision-weights q8): each linear with one scale per output channel
// and per activation row (a row-long block), on a 448x448 image's patches (the mergers' rows
// merged 2x2): gemm_q8_rowblock/<shape>/M=<m>/<isa>/threads=2, GOPS against the int8 peak.
int register_vision_q8() {
    std::vector<Isa> isas = {Isa::kAvx2};
    if (kernels::isa_supported(Isa::kAvx512Bf16)) isas.push_back(Isa::kAvx512Bf16);
    for (const LinearShape& s : kLinearShapes) {
        if (!s.vision || std::string_view(s.name) == "vision_patch_embed") continue;  // stays bf16
        const int m = kVisionM[0] / s.m_div;
        for (Isa isa : isas) {
            const std::string name = std::string("gemm_q8_rowblock/") + s.name +
                                     "/M=" + std::to_string(m) + "/" + kernels::isa_name(isa) +
                                     "/threads=" + std::to_string(kPrefillThreads);
            benchmark::RegisterBenchmark(name.c_str(), run_q8, &s, m, isa, false, kPrefillThreads,
                                         8, kernels::q8_row_block(s.k))
                ->UseRealTime()
                ->MinTime(0.1)
                ->Unit(benchmark::kMillisecond);
        }
    }
    return 0;
}

const int kRegistered = register_q8();
const int kRegisteredVision = register_vision_q8();

}  // namespace
}  // namespace qvl::bench
