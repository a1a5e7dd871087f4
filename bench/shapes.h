// The matrix shapes of Qwen3-VL-2B-Instruct that the kernel benchmarks run (from its config.json:
// text hidden 2048, intermediate 6144, 16 query / 8 KV heads of 128, vocab 151936; vision hidden
// 1024, intermediate 4096, 16x16x2 RGB patches = 1536 inputs, 2x2 merge -> 4096 -> 2048).
// Header-only: bench/CMakeLists.txt compiles *_bench.cpp and bench_*.cpp only.
#pragma once

#include <iterator>
#include <span>
#include <string_view>
#include <vector>

namespace qvl::bench {

struct LinearShape {
    const char* name;  // benchmark path component, e.g. "text_up"
    int n;             // output features (weight rows)
    int k;             // input features
    bool gated;        // SwiGLU pair: two [n, k] matrices in one call
    bool vision;       // runs over image patches (M = 784, 3520) rather than text tokens
    int m_div = 1;     // vision: M = patches / m_div (the mergers see 2x2-merged rows)
    // The model's epilogue: bias, activation (0 none, 1 GELU tanh, 2 GELU erf), residual add.
    bool bias = false;
    int act = 0;
    bool residual = false;
};

inline constexpr LinearShape kLinearShapes[] = {
    {"vision_patch_embed", 1024, 1536, false, true, 1, true},
    {"vision_qkv", 3072, 1024, false, true, 1, true},
    {"vision_proj", 1024, 1024, false, true, 1, true, 0, true},
    {"vision_fc1", 4096, 1024, false, true, 1, true, 1},
    {"vision_fc2", 1024, 4096, false, true, 1, true, 0, true},
    {"merger_fc1", 4096, 4096, false, true, 4, true, 2},
    {"merger_fc2", 2048, 4096, false, true, 4, true},
    {"text_q", 2048, 2048, false, false},
    {"text_k", 1024, 2048, false, false},
    {"text_v", 1024, 2048, false, false},
    {"text_o", 2048, 2048, false, false, 1, false, 0, true},
    {"text_gate_up", 6144, 2048, true, false},
    {"text_down", 2048, 6144, false, false, 1, false, 0, true},
    {"lm_head", 151936, 2048, false, false},
};

inline std::span<const LinearShape> linear_shapes() { return kLinearShapes; }

// Rows (tokens or patches) per call: decode, an 8-token batch, the prompts of a 448x448 and a
// 1280x704 image (212 and 896 tokens), one 448x448 image (784 patches; the mergers see 196), one
// 1280x704 image (3520 patches; mergers 880).
inline constexpr int kTextM[] = {1, 8, 212, 896};
inline constexpr int kVisionM[] = {784, 3520};

// Rows with m <= kGemvMaxM are weight-bandwidth bound (gemv/... rows, GBps); larger m are GEMMs.
inline constexpr int kGemvMaxM = 8;

// The M values every linear benchmark (qvl's gemm/gemv rows, the peer rows) runs for a shape:
// vision shapes take the image patch counts (divided by m_div), lm_head only decode (M = 1),
// the other text shapes kTextM.
inline std::vector<int> linear_ms(const LinearShape& s) {
    std::vector<int> ms;
    if (s.vision) {
        for (int m : kVisionM) ms.push_back(m / s.m_div);
    } else if (std::string_view(s.name) == "lm_head") {
        ms.push_back(1);
    } else {
        ms.assign(std::begin(kTextM), std::end(kTextM));
    }
    return ms;
}

}  // namespace qvl::bench
