// 4-bit-weight GEMM panel kernel on AVX2 (no VNNI). The nibbles unpack (and; shift and and) to
// q + 8 in [0, 15], vpmaddubsw's unsigned operand as they are: a pair of products is at most
// 2·15·127 and two pairs' sums 7620, so the int16 adds cannot saturate; vpmaddwd widens to int32.
// Each row's block sum starts at -8 · Σ q_a (kernels/gemm_q4.h) and is exact, and the f32 block
// chain is the one in kernels/gemm_q8.h, so the results equal the other tiers'.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/gemm_q8_internal.h"
#include "kernels/x86/static_count.h"

namespace qvl::kernels::detail {
namespace {

constexpr std::ptrdiff_t kPrefetchBytes = 4096;

std::int32_t load_i32(const std::int8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Σ over the two k-groups of 8 columns: lo nibbles times x0, high nibbles times x1, in int32.
__m256i dot8(__m256i acc, __m256i v, __m256i x0, __m256i x1, __m256i low, __m256i ones) {
    const __m256i w0 = _mm256_and_si256(v, low);
    const __m256i w1 = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
    const __m256i pairs =
        _mm256_add_epi16(_mm256_maddubs_epi16(w0, x0), _mm256_maddubs_epi16(w1, x1));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
}

template <int R>
void panel_rows(const Q8PanelArgs& a, int r0) {
    const Q8Matrix& w = *a.w;
    const std::ptrdiff_t block_bytes = std::ptrdiff_t(w.block) * kQ8Panel / 2;
    const std::int8_t* wq = w.q + std::ptrdiff_t(a.panel) * w.k_blocks * block_bytes;
    const std::uint16_t* ws = w.scales_f16 + std::ptrdiff_t(a.panel) * w.k_blocks * kQ8Panel;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256 acc_lo[R], acc_hi[R];
    for (int r = 0; r < R; ++r) acc_lo[r] = acc_hi[r] = _mm256_setzero_ps();
    for (int b = 0; b < w.k_blocks; ++b) {
        const std::int8_t* blk = wq + b * block_bytes;
        __m256i lo[R], hi[R];
        for (int r = 0; r < R; ++r) {
            lo[r] = hi[r] = _mm256_set1_epi32(-8 * a.sa[std::ptrdiff_t(r0 + r) * w.k_blocks + b]);
        }
        for (int h = 0; h < w.block / 8; ++h) {
            _mm_prefetch(reinterpret_cast<const char*>(blk + h * 64 + kPrefetchBytes), _MM_HINT_T0);
            const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + h * 64));
            const __m256i v1 =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + h * 64 + 32));
            for (int r = 0; r < R; ++r) {
                const std::int8_t* x = a.qa + (r0 + r) * a.lda_q + b * w.block + h * 8;
                const __m256i x0 = _mm256_set1_epi32(load_i32(x));
                const __m256i x1 = _mm256_set1_epi32(load_i32(x + 4));
                lo[r] = dot8(lo[r], v0, x0, x1, low, ones);
                hi[r] = dot8(hi[r], v1, x0, x1, low, ones);
            }
        }
        const auto* s16 = reinterpret_cast<const __m128i*>(ws + b * kQ8Panel);
        const __m256 dw_lo = _mm256_cvtph_ps(_mm_loadu_si128(s16));
        const __m256 dw_hi = _mm256_cvtph_ps(_mm_loadu_si128(s16 + 1));
        for (int r = 0; r < R; ++r) {
            const __m256 da = _mm256_set1_ps(a.da[std::ptrdiff_t(r0 + r) * w.k_blocks + b]);
            acc_lo[r] =
                _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(lo[r]), dw_lo), da, acc_lo[r]);
            acc_hi[r] =
                _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(hi[r]), dw_hi), da, acc_hi[r]);
        }
    }
    for (int r = 0; r < R; ++r) {
        _mm256_storeu_ps(a.acc + (r0 + r) * kQ8Panel, acc_lo[r]);
        _mm256_storeu_ps(a.acc + (r0 + r) * kQ8Panel + 8, acc_hi[r]);
    }
}

}  // namespace

void q4_quantize_row_avx2(const float* x, int n, int block, std::uint8_t* u, std::uint16_t* d16) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i lo = _mm256_set1_epi32(-8), hi = _mm256_set1_epi32(7);
    const __m256i bias = _mm256_set1_epi32(8);
    for (int b = 0; b * block < n; ++b) {
        const float* xb = x + std::ptrdiff_t(b) * block;
        std::uint8_t* ub = u + std::ptrdiff_t(b) * block;
        // As the AVX-512 quantizer: the largest magnitude (NaN never wins), then the first value
        // that has it.
        __m256 amax = _mm256_setzero_ps();
        for (int i = 0; i < block; i += 8) {
            amax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xb + i), abs_mask), amax);
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const __m256 am = _mm256_broadcastss_ps(m4);
        float ext = 0.0f;
        for (int i = 0; i < block; i += 8) {
            const int hit = _mm256_movemask_ps(
                _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(xb + i), abs_mask), am, _CMP_EQ_OQ));
            if (hit != 0) {
                ext = xb[i + __builtin_ctz(unsigned(hit))];
                break;
            }
        }
        d16[b] = q4_block_scale(ext);
        if (d16[b] == 0) {
            std::memset(ub, 8, std::size_t(block));
            continue;
        }
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(d16[b]));
        for (int i = 0; i < block; i += 8) {
            const __m256 v = _mm256_loadu_ps(xb + i);
            // x / d as the reference divides, rounded to nearest even; NaN lanes give 0.
            __m256i q = _mm256_and_si256(_mm256_cvtps_epi32(_mm256_div_ps(v, d)),
                                         _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q)));
            q = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(q, lo), hi), bias);
            const __m128i q16 =
                _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64(reinterpret_cast<__m128i*>(ub + i), _mm_packus_epi16(q16, q16));
        }
    }
}

void q4_panel_avx2(const Q8PanelArgs& a) {
    constexpr int kRows = 3;  // as the int8 kernel: 12 accumulators, the weights and broadcasts
    x86::for_static_tiles<kRows>(
        a.rows, [&](auto rows, int r) { panel_rows<decltype(rows)::value>(a, r); });
}

}  // namespace qvl::kernels::detail
