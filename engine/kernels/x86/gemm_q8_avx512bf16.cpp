// Int8-weight GEMM panel kernel on AVX-512 VNNI (vpdpbusd), in the avx512bf16 tier (its flags
// include VNNI). vpdpbusd multiplies unsigned by signed bytes, so one side carries a +128 bias
// and each block's int sum is corrected for it:
// - from kQ8VnniBiasedMinRows rows the activations come biased (q_a + 128) and the weights are
//   multiplied as stored; the correction, -128 · Σ w of each column and block, is the same for
//   every row: computed once per panel (vpdpbusd of ones) and the start of every row's sum;
// - below that (a decode step: each weight used by one to three rows) the weights are flipped
//   to w + 128 on load (one xor) and the correction is -128 · Σ q_a of each row and block, which
//   the activation quantizer provides.
// Both give the exact integer sum Σ q_a · w (no overflow: |sum| < 2^22), so the same bits;
// integer sums are exact, so their order changes nothing; the f32 block chain is the one in
// kernels/gemm_q8.h.
// GCC 12 reports the undefined lanes inside _mm512_reduce_* and friends as (maybe-)
// uninitialised; they are not read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/gemm_q8_internal.h"
#include "kernels/x86/static_count.h"

namespace qvl::kernels::detail {
namespace {

std::int32_t load_i32(const std::int8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// corr[b] = -128 · Σ w over block b of each of the panel's 16 columns.
void weight_corrections(const Q8PanelArgs& a, __m512i* corr) {
    const Q8Matrix& w = *a.w;
    const std::ptrdiff_t block_bytes = std::ptrdiff_t(w.block) * kQ8Panel;
    const std::int8_t* wq = w.q + std::ptrdiff_t(a.panel) * w.k_blocks * block_bytes;
    const __m512i ones = _mm512_set1_epi8(1);
    for (int b = 0; b < w.k_blocks; ++b) {
        __m512i sum = _mm512_setzero_si512();
        for (int g = 0; g < w.block / 4; ++g) {
            sum = _mm512_dpbusd_epi32(sum, ones, _mm512_loadu_si512(wq + b * block_bytes + g * 64));
        }
        corr[b] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7));
    }
}

// Row tiles of three or more rows read the panel's weights 8 KiB ahead into L2. That is for
// batched decode: with a few rows each weight line feeds enough vpdpbusd that the hardware
// prefetchers fall behind DRAM. Prefill's tiles take it too, where the panel is already cached
// after its first tile and the prefetch costs nothing measurable. One row (the single-sequence
// decode) ran slower with it and two rows were mixed, so it starts at three; 4 KiB ahead helped
// less (the figures: bench/README.md, kernel design measurements).
constexpr int kPrefetchMinRows = 3;
constexpr int kPrefetchAheadBytes = 8192;

// kBiased: activations q_a + 128 and corr from weight_corrections; else signed activations.
template <int R, bool kBiased>
void panel_rows(const Q8PanelArgs& a, int r0, const __m512i* corr) {
    const Q8Matrix& w = *a.w;
    const std::ptrdiff_t block_bytes = std::ptrdiff_t(w.block) * kQ8Panel;
    const std::int8_t* wq = w.q + std::ptrdiff_t(a.panel) * w.k_blocks * block_bytes;
    const float* ws = w.scales + std::ptrdiff_t(a.panel) * w.k_blocks * kQ8Panel;
    const __m512i flip = _mm512_set1_epi8(char(0x80));
    const int groups = w.block / 4;
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int b = 0; b < w.k_blocks; ++b) {
        const std::int8_t* blk = wq + b * block_bytes;
        // Integer sums start at the flip's correction -128 · Σ q_a, so the block epilogue (per
        // row and block, which is what bounds this kernel at prefill sizes) is the conversion
        // and the two scalings only. One chain per row when there are rows enough to hide the
        // vpdpbusd latency, two (added at the end) for the one to three rows of a decode step.
        // Integer sums are exact in any order.
        // On Zen 4 the epilogue's vmulps and vfmadd each take a cycle of the pipe that runs
        // vpdpbusd, so blocks of 64 (16 vpdpbusd per row and block) cap the kernel at 16/18 of
        // the int8 peak; larger blocks would be faster, but the block size is the accuracy's
        // choice (model/quantize.h; the measurements: bench/README.md).
        constexpr bool kTwoChains = R < 4;
        __m512i s[R], s2[R];
        for (int r = 0; r < R; ++r) {
            s[r] = kBiased
                       ? corr[b]
                       : _mm512_set1_epi32(-128 * a.sa[std::ptrdiff_t(r0 + r) * w.k_blocks + b]);
            s2[r] = _mm512_setzero_si512();
        }
        for (int g = 0; g < groups; g += 2) {
            if constexpr (R >= kPrefetchMinRows) {  // two lines; a prefetch never faults
                const char* ahead =
                    reinterpret_cast<const char*>(blk + g * 64) + kPrefetchAheadBytes;
                _mm_prefetch(ahead, _MM_HINT_T1);
                _mm_prefetch(ahead + 64, _MM_HINT_T1);
            }
            __m512i w0 = _mm512_loadu_si512(blk + g * 64);
            __m512i w1 = _mm512_loadu_si512(blk + (g + 1) * 64);
            if constexpr (!kBiased) {
                w0 = _mm512_xor_si512(w0, flip);
                w1 = _mm512_xor_si512(w1, flip);
            }
            for (int r = 0; r < R; ++r) {
                const std::int8_t* x = a.qa + (r0 + r) * a.lda_q + b * w.block + g * 4;
                const __m512i x0 = _mm512_set1_epi32(load_i32(x));
                const __m512i x1 = _mm512_set1_epi32(load_i32(x + 4));
                __m512i& second = kTwoChains ? s2[r] : s[r];
                // vpdpbusd's first factor is the unsigned one: the biased side.
                if constexpr (kBiased) {
                    s[r] = _mm512_dpbusd_epi32(s[r], x0, w0);
                    second = _mm512_dpbusd_epi32(second, x1, w1);
                } else {
                    s[r] = _mm512_dpbusd_epi32(s[r], w0, x0);
                    second = _mm512_dpbusd_epi32(second, w1, x1);
                }
            }
        }
        if constexpr (kTwoChains) {
            for (int r = 0; r < R; ++r) s[r] = _mm512_add_epi32(s[r], s2[r]);
        }
        const __m512 dw = _mm512_loadu_ps(ws + b * kQ8Panel);
        for (int r = 0; r < R; ++r) {
            const std::ptrdiff_t rb = std::ptrdiff_t(r0 + r) * w.k_blocks + b;
            const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(s[r]), dw);
            acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(a.da[rb]), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(a.acc + (r0 + r) * kQ8Panel, acc[r]);
}

}  // namespace

void q8_panel_avx512vnni(const Q8PanelArgs& a) {
    constexpr int kRows = 8;  // 12 measured no faster
    if (!a.biased) {
        x86::for_static_tiles<kRows>(a.rows, [&](auto rows, int r) {
            panel_rows<decltype(rows)::value, false>(a, r, nullptr);
        });
        return;
    }
    auto* corr = static_cast<__m512i*>(
        thread_scratch(kScratchQ8Corrections, sizeof(__m512i) * std::size_t(a.w->k_blocks)));
    weight_corrections(a, corr);
    x86::for_static_tiles<kRows>(
        a.rows, [&](auto rows, int r) { panel_rows<decltype(rows)::value, true>(a, r, corr); });
}

void q8_quantize_row_avx512(const float* x, int k, int block, std::int8_t* q, float* d,
                            std::int32_t* sums) {
    const int kb = (k + block - 1) / block;
    const int vecs = block / 16;
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    for (int b = 0; b < kb; ++b) {
        const int k0 = b * block;
        // Blocks up to 128 values stay in registers between the two passes; a row-long block
        // (kernels/gemm_q8.h, q8_row_block) is read twice.
        const auto load = [&](int i) {
            const int left = std::clamp(k - (k0 + i * 16), 0, 16);
            const __mmask16 m = __mmask16((1u << left) - 1u);
            return _mm512_maskz_loadu_ps(m, left > 0 ? x + k0 + i * 16 : x);
        };
        __m512 v[8];
        __m512 amax = _mm512_setzero_ps();
        for (int i = 0; i < vecs; ++i) {
            const __m512 vi = load(i);
            if (i < 8) v[i] = vi;
            amax = _mm512_max_ps(amax, _mm512_and_ps(vi, abs_mask));
        }
        const float am = _mm512_reduce_max_ps(amax);
        if (!(am > 0.0f)) {
            std::memset(q + k0, 0, std::size_t(block));
            d[b] = 0.0f;
            sums[b] = 0;
            continue;
        }
        const __m512 inv = _mm512_set1_ps(127.0f / am);
        const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
        __m512i total = _mm512_setzero_si512();
        for (int i = 0; i < vecs; ++i) {
            const __m512 vi = vecs <= 8 ? v[i] : load(i);
            __m512i qi = _mm512_cvtps_epi32(_mm512_mul_ps(vi, inv));  // nearest even
            qi = _mm512_min_epi32(_mm512_max_epi32(qi, lo), hi);
            total = _mm512_add_epi32(total, qi);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k0 + i * 16), _mm512_cvtepi32_epi8(qi));
        }
        d[b] = am / 127.0f;
        sums[b] = _mm512_reduce_add_epi32(total);
    }
}

}  // namespace qvl::kernels::detail
