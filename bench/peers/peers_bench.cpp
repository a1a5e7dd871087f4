// Peer libraries on qvl's GEMM shapes, in the same process and with the same timing as
// gemm_bench.cpp, so their pct_peak divides by the same measured peaks. Built only with
// -DQVL_BENCH_PEERS=ON (bench/CMakeLists.txt adds this file outside the bench/*_bench.cpp glob).
//
// Rows, for every (shape, M) of the gemm/... rows (M > kGemvMaxM) at 1 and 2 threads:
//   peer/onednn_bf16/<shape>/M=<m>/threads=<t>         oneDNN matmul, bf16 src and weights, f32
//   dst;
//                                                       weights [n, k] as in the checkpoint (format
//                                                       "ba" of the k x n operand, no reorder)
//   peer/onednn_bf16_prepacked/<shape>/M=<m>/threads=<t>  the same with the weights reordered once,
//                                                       outside the timing, to the layout oneDNN
//                                                       picks
//   peer/onednn_f32/<shape>/M=<m>/threads=<t>           oneDNN matmul, all f32, weights [n, k]
//   peer/openblas_f32/<shape>/M=<m>/threads=<t>         cblas_sgemm(RowMajor, NoTrans, Trans)
// Counters GFLOPS and pct_peak (bf16 peak for the bf16 rows, fp32 peak for the f32 rows); the
// label names oneDNN's implementation or OpenBLAS's core type. Gated shapes (text_gate_up) run as
// one matmul with the two [n, k] matrices stacked to [2n, k]: the same FLOPs as qvl's fused call.
//
// Threads: Debian's oneDNN 2.6 uses OpenMP (libgomp), so each oneDNN row sets
// omp_set_num_threads before it creates its primitive. OpenBLAS is opened with dlopen here, not
// linked: linked, it picks its kernels in a load-time constructor, before any code of ours could
// set OPENBLAS_CORETYPE (checked: a setenv from a static initialiser came too late). Opening it
// during registration lets us set OPENBLAS_CORETYPE=SkylakeX (unless the user set it) on AVX-512
// CPUs that its 0.3.21 table does not know (Zen 5 otherwise gets its AVX2 Haswell kernels).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/bf16.h"
#include "base/cpu_features.h"
#include "bench_peaks.h"
#include "shapes.h"

#ifndef QVL_OPENBLAS_LIBRARY
#error "bench/CMakeLists.txt passes QVL_OPENBLAS_LIBRARY (the OpenBLAS shared library to dlopen)"
#endif

namespace qvl::bench {
namespace {

enum class Peer { kOnednnBf16, kOnednnBf16Prepacked, kOnednnF32, kOpenblasF32 };

const char* peer_name(Peer p) {
    switch (p) {
        case Peer::kOnednnBf16:
            return "onednn_bf16";
        case Peer::kOnednnBf16Prepacked:
            return "onednn_bf16_prepacked";
        case Peer::kOnednnF32:
            return "onednn_f32";
        case Peer::kOpenblasF32:
            return "openblas_f32";
    }
    return "?";
}

// ---- OpenBLAS, opened at registration (before any OpenMP region binds the main thread) ----

struct OpenBlas {
    decltype(&cblas_sgemm) sgemm = nullptr;
    decltype(&openblas_set_num_threads) set_num_threads = nullptr;
    decltype(&openblas_get_corename) corename = nullptr;
    std::string error;  // why it could not be opened; empty when usable
};

OpenBlas open_openblas() {
    OpenBlas lib;
    if (base::cpu_features().avx512f) setenv("OPENBLAS_CORETYPE", "SkylakeX", /*overwrite=*/0);
    void* h = dlopen(QVL_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        lib.error = std::string("cannot open ") + QVL_OPENBLAS_LIBRARY + ": " + dlerror();
        return lib;
    }
    lib.sgemm = reinterpret_cast<decltype(lib.sgemm)>(dlsym(h, "cblas_sgemm"));
    lib.set_num_threads =
        reinterpret_cast<decltype(lib.set_num_threads)>(dlsym(h, "openblas_set_num_threads"));
    lib.corename = reinterpret_cast<decltype(lib.corename)>(dlsym(h, "openblas_get_corename"));
    if (!lib.sgemm || !lib.set_num_threads || !lib.corename) {
        lib.error = std::string(QVL_OPENBLAS_LIBRARY) + " lacks cblas_sgemm or openblas_*";
    }
    return lib;
}

const OpenBlas& openblas() {
    static const OpenBlas lib = open_openblas();
    return lib;
}

// CPUs the calling thread may run on. OMP_PROC_BIND/OMP_PLACES make libgomp pin the main thread
// to one CPU at the first oneDNN row; OpenBLAS then runs its threads there (machine.md "Traps").
int cpus_allowed() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    return CPU_COUNT(&set);
}

// ---- Operands: random activations and weights for one (shape, m), bf16 and f32 copies ----

struct Fixture {
    const LinearShape* shape = nullptr;
    int m = 0, n = 0, k = 0;  // n counts both matrices of a gated shape
    std::vector<float> a, w, c;
    std::vector<std::uint16_t> a_bf16, w_bf16;

    Fixture(const LinearShape& s, int m_rows)
        : shape(&s), m(m_rows), n(s.n * (s.gated ? 2 : 1)), k(s.k) {
        std::mt19937 rng(12345);
        std::uniform_real_distribution<float> act(-1.0f, 1.0f), wgt(-0.05f, 0.05f);
        a.resize(std::size_t(m) * k);
        a_bf16.resize(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            a_bf16[i] = base::f32_to_bf16(act(rng)).bits;
            a[i] = base::bf16_to_f32(base::bf16{a_bf16[i]});  // both precisions see equal values
        }
        w.resize(std::size_t(n) * k);
        w_bf16.resize(w.size());
        for (std::size_t i = 0; i < w.size(); ++i) {
            w_bf16[i] = base::f32_to_bf16(wgt(rng)).bits;
            w[i] = base::bf16_to_f32(base::bf16{w_bf16[i]});
        }
        c.assign(std::size_t(m) * n, 0.0f);
    }
};

Fixture& fixture_for(const LinearShape& s, int m) {
    static std::unique_ptr<Fixture> current;
    if (!current || current->shape != &s || current->m != m) {
        current.reset();
        current = std::make_unique<Fixture>(s, m);
    }
    return *current;
}

// Times fn like gemm_bench.cpp (wall clock over the whole loop) and sets GFLOPS and pct_peak.
template <class Fn>
void time_gemm(benchmark::State& state, double flops, double peak, Fn&& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
        fn();
        benchmark::ClobberMemory();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double gflops = flops * double(state.iterations()) / seconds / 1e9;
    state.counters["GFLOPS"] = gflops;
    state.counters["pct_peak"] = peak > 0 ? 100.0 * gflops / peak : 0.0;
}

void run_onednn(benchmark::State& state, Fixture& f, Peer peer, int threads, double flops) {
    using dnnl::memory;
    using tag = memory::format_tag;
    const bool bf16 = peer != Peer::kOnednnF32;
    const memory::data_type in_type = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    // oneDNN sizes its blocking by omp_get_max_threads() when the primitive is created.
    omp_set_num_threads(threads);
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const memory::desc a_md({f.m, f.k}, in_type, tag::ab);
    // The k x n weights operand stored as the checkpoint's [n, k] rows: oneDNN's "ba".
    const memory::desc w_md({f.k, f.n}, in_type, tag::ba);
    const memory::desc c_md({f.m, f.n}, memory::data_type::f32, tag::ab);
    const bool prepack = peer == Peer::kOnednnBf16Prepacked;
    const memory::desc w_req = prepack ? memory::desc({f.k, f.n}, in_type, tag::any) : w_md;
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_req, c_md), engine);
    const dnnl::matmul prim(pd);
    void* a_ptr = bf16 ? static_cast<void*>(f.a_bf16.data()) : f.a.data();
    void* w_ptr = bf16 ? static_cast<void*>(f.w_bf16.data()) : f.w.data();
    memory a_mem(a_md, engine, a_ptr), w_user(w_md, engine, w_ptr), c_mem(c_md, engine, f.c.data());
    memory w_mem = w_user;
    if (pd.weights_desc() != w_md) {  // prepacked: one reorder, as a loader would do it
        w_mem = memory(pd.weights_desc(), engine);
        dnnl::reorder(w_user, w_mem).execute(stream, w_user, w_mem);
        stream.wait();
    }
    state.SetLabel(pd.impl_info_str());
    const double peak = bf16 ? peak_gflops_bf16(threads) : peak_gflops_f32(threads);
    time_gemm(state, flops, peak, [&] {
        prim.execute(stream,
                     {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, c_mem}});
        stream.wait();
    });
}

void run_openblas(benchmark::State& state, Fixture& f, int threads, double flops) {
    const OpenBlas& lib = openblas();
    if (!lib.error.empty()) {
        state.SkipWithError(lib.error.c_str());
        return;
    }
    if (const int cpus = cpus_allowed(); cpus < threads) {
        const std::string why = "this thread may run on " + std::to_string(cpus) +
                                " cpu(s), fewer than " + std::to_string(threads) +
                                " threads (unset OMP_PROC_BIND and OMP_PLACES)";
        state.SkipWithError(why.c_str());
        return;
    }
    lib.set_num_threads(threads);
    state.SetLabel(lib.corename());
    time_gemm(state, flops, peak_gflops_f32(threads), [&] {
        lib.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, f.m, f.n, f.k, 1.0f, f.a.data(), f.k,
                  f.w.data(), f.k, 0.0f, f.c.data(), f.n);
    });
    // OpenBLAS's idle workers spin for about 2^28 cycles (~70 ms) after a call; let them fall
    // asleep so they do not take a core from the next row.
    if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));
}

// A fast wrong answer (say, a misread weight layout) must not pass for a result: a few outputs
// against double-precision dot products. Empty when they match.
std::string check_output(const Fixture& f) {
    for (long s = 0; s < 16; ++s) {
        const int i = int(s * 7919 % f.m), j = int(s * 104729 % f.n);
        double ref = 0.0, mag = 0.0;
        for (int kk = 0; kk < f.k; ++kk) {
            const double p =
                double(f.a[std::size_t(i) * f.k + kk]) * f.w[std::size_t(j) * f.k + kk];
            ref += p;
            mag += std::fabs(p);
        }
        const double got = f.c[std::size_t(i) * f.n + j];
        if (!(std::fabs(got - ref) <= 1e-3 * mag + 1e-6)) {  // NaN fails too
            return "wrong output c[" + std::to_string(i) + "][" + std::to_string(j) +
                   "] = " + std::to_string(got) + ", expected " + std::to_string(ref);
        }
    }
    return {};
}

void run_peer(benchmark::State& state, const LinearShape* s, int m, Peer peer, int threads) {
    Fixture& f = fixture_for(*s, m);
    std::fill(f.c.begin(), f.c.end(), std::numeric_limits<float>::quiet_NaN());
    const double flops = 2.0 * f.m * f.n * f.k;
    if (peer == Peer::kOpenblasF32) {
        run_openblas(state, f, threads, flops);
    } else {
        try {
            run_onednn(state, f, peer, threads, flops);
        } catch (const dnnl::error& e) {
            state.SkipWithError((std::string("onednn: ") + e.what()).c_str());
            return;
        }
    }
    if (state.error_occurred()) return;
    if (const std::string bad = check_output(f); !bad.empty()) state.SkipWithError(bad.c_str());
}

int register_all() {
    openblas();  // open it now, before any OpenMP region runs (see cpus_allowed)
    if (std::getenv("OMP_PROC_BIND") || std::getenv("OMP_PLACES")) {
        std::fprintf(
            stderr,
            "qvl-bench-kernels: OMP_PROC_BIND/OMP_PLACES pin the main thread once a oneDNN "
            "row has run; multi-threaded OpenBLAS rows then fail and thread pools created "
            "later share one cpu: unset them\n");
    }
    for (const LinearShape& s : linear_shapes()) {
        for (int m : linear_ms(s)) {
            if (m <= kGemvMaxM) continue;
            for (int threads : {1, 2}) {
                for (Peer p : {Peer::kOnednnBf16, Peer::kOnednnBf16Prepacked, Peer::kOnednnF32,
                               Peer::kOpenblasF32}) {
                    const std::string name = std::string("peer/") + peer_name(p) + "/" + s.name +
                                             "/M=" + std::to_string(m) +
                                             "/threads=" + std::to_string(threads);
                    benchmark::RegisterBenchmark(name.c_str(), run_peer, &s, m, p, threads)
                        ->UseRealTime()
                        ->MinTime(0.1)
                        ->Unit(benchmark::kMillisecond);
                }
            }
        }
    }
    return 0;
}

const int kRegistered = register_all();

}  // namespace
}  // namespace qvl::bench
