// 4-bit-weight GEMM panel kernel on AVX-512 VNNI (vpdpbusd), in the avx512bf16 tier (its flags
// include VNNI). Each 64 bytes of a block hold two of the int8 kernel's 4-bytes-per-column
// vectors in their nibbles (kernels/gemm_q4.h): an and gives the first, a shift and an and the
// second, already unsigned (q + 8 in [0, 15]) for vpdpbusd's unsigned operand, so the signed
// activations are multiplied as quantized and each row's integer sum starts at the correction
// -8 · Σ q_a of its block. The sum is exact (|sum| < 2^20), so its order changes nothing; the f32
// block chain is the one in kernels/gemm_q8.h.
// GCC 12 reports the undefined lanes inside _mm512_cvtph_ps and _mm512_cvtepi32_ps as
// (maybe-)uninitialised, as in the int8 kernel; they are not read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

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

// Rows of three or more prefetch the panel ahead into L2, as the int8 kernel does and for the
// same reason (batched decode); a single decode row leaves it to the hardware prefetchers.
constexpr int kPrefetchMinRows = 3;
constexpr int kPrefetchAheadBytes = 4096;

template <int R>
void panel_rows(const Q8PanelArgs& a, int r0) {
    const Q8Matrix& w = *a.w;
    const std::ptrdiff_t block_bytes = std::ptrdiff_t(w.block) * kQ8Panel / 2;
    const std::int8_t* wq = w.q + std::ptrdiff_t(a.panel) * w.k_blocks * block_bytes;
    const std::uint16_t* ws = w.scales_f16 + std::ptrdiff_t(a.panel) * w.k_blocks * kQ8Panel;
    const __m512i low = _mm512_set1_epi8(0x0f);
    // One chain per row when there are rows enough to hide the vpdpbusd latency, two (added at
    // the end) for the few rows of a decode step.
    constexpr bool kTwoChains = R < 4;
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int b = 0; b < w.k_blocks; ++b) {
        const std::int8_t* blk = wq + b * block_bytes;
        __m512i s[R], s2[R];
        for (int r = 0; r < R; ++r) {
            s[r] = _mm512_set1_epi32(-8 * a.sa[std::ptrdiff_t(r0 + r) * w.k_blocks + b]);
            s2[r] = _mm512_setzero_si512();
        }
        for (int h = 0; h < w.block / 8; ++h) {
            if constexpr (R >= kPrefetchMinRows) {
                _mm_prefetch(reinterpret_cast<const char*>(blk + h * 64) + kPrefetchAheadBytes,
                             _MM_HINT_T1);
            }
            const __m512i v = _mm512_loadu_si512(blk + h * 64);
            const __m512i w0 = _mm512_and_si512(v, low);
            const __m512i w1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
            for (int r = 0; r < R; ++r) {
                const std::int8_t* x = a.qa + (r0 + r) * a.lda_q + b * w.block + h * 8;
                __m512i& second = kTwoChains ? s2[r] : s[r];
                s[r] = _mm512_dpbusd_epi32(s[r], w0, _mm512_set1_epi32(load_i32(x)));
                second = _mm512_dpbusd_epi32(second, w1, _mm512_set1_epi32(load_i32(x + 4)));
            }
        }
        if constexpr (kTwoChains) {
            for (int r = 0; r < R; ++r) s[r] = _mm512_add_epi32(s[r], s2[r]);
        }
        const __m512 dw = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ws + b * kQ8Panel)));
        for (int r = 0; r < R; ++r) {
            const std::ptrdiff_t rb = std::ptrdiff_t(r0 + r) * w.k_blocks + b;
            const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(s[r]), dw);
            acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(a.da[rb]), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(a.acc + (r0 + r) * kQ8Panel, acc[r]);
}

}  // namespace

void q4_quantize_row_avx512(const float* x, int n, int block, std::uint8_t* u, std::uint16_t* d16) {
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    const __m512i lo = _mm512_set1_epi32(-8), hi = _mm512_set1_epi32(7);
    const __m512i bias = _mm512_set1_epi32(8);
    for (int b = 0; b * block < n; ++b) {
        const float* xb = x + std::ptrdiff_t(b) * block;
        std::uint8_t* ub = u + std::ptrdiff_t(b) * block;
        // The largest magnitude (max(|x|, amax) keeps amax where x is NaN, so NaN never wins),
        // then the first value that has it: the reference's extreme, sign included.
        __m512 amax = _mm512_setzero_ps();
        for (int i = 0; i < block; i += 16) {
            amax = _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(xb + i), abs_mask), amax);
        }
        const __m512 am = _mm512_set1_ps(_mm512_reduce_max_ps(amax));
        float ext = 0.0f;
        for (int i = 0; i < block; i += 16) {
            const __mmask16 hit = _mm512_cmp_ps_mask(
                _mm512_and_ps(_mm512_loadu_ps(xb + i), abs_mask), am, _CMP_EQ_OQ);
            if (hit != 0) {
                ext = xb[i + __builtin_ctz(hit)];
                break;
            }
        }
        d16[b] = q4_block_scale(ext);
        if (d16[b] == 0) {
            std::memset(ub, 8, std::size_t(block));
            continue;
        }
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(d16[b]));
        for (int i = 0; i < block; i += 16) {
            const __m512 v = _mm512_loadu_ps(xb + i);
            // x / d as the reference divides, rounded to nearest even; NaN lanes give 0.
            __m512i q =
                _mm512_maskz_cvtps_epi32(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), _mm512_div_ps(v, d));
            q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), bias);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(ub + i), _mm512_cvtepi32_epi8(q));
        }
    }
}

void q4_panel_avx512vnni(const Q8PanelArgs& a) {
    constexpr int kRows = 8;
    x86::for_static_tiles<kRows>(
        a.rows, [&](auto rows, int r) { panel_rows<decltype(rows)::value>(a, r); });
}

}  // namespace qvl::kernels::detail
