// Int8-weight GEMM panel kernel on AVX2 (plain AVX2 + FMA, no VNNI): vpmaddubsw needs one
// unsigned operand, so the sign moves onto the activations (|w| times x·sign(w), at most
// 2·127·127 per pair: no int16 saturation), then vpmaddwd widens to int32. Integer sums are
// exact; the f32 block chain is the one in kernels/gemm_q8.h, so results equal the other tiers.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/gemm_q8_internal.h"
#include "kernels/x86/static_count.h"

namespace qvl::kernels::detail {
namespace {

constexpr std::ptrdiff_t kQ8PrefetchBytes = 4096;

std::int32_t load_i32(const std::int8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

__m256i dot4(__m256i acc, __m256i w, __m256i x, __m256i ones) {
    const __m256i prod = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(prod, ones));
}

template <int R>
void panel_rows(const Q8PanelArgs& a, int r0) {
    const Q8Matrix& w = *a.w;
    const std::ptrdiff_t block_bytes = std::ptrdiff_t(w.block) * kQ8Panel;
    const std::int8_t* wq = w.q + std::ptrdiff_t(a.panel) * w.k_blocks * block_bytes;
    const float* ws = w.scales + std::ptrdiff_t(a.panel) * w.k_blocks * kQ8Panel;
    const __m256i ones = _mm256_set1_epi16(1);
    const int groups = w.block / 4;
    __m256 acc_lo[R], acc_hi[R];
    for (int r = 0; r < R; ++r) acc_lo[r] = acc_hi[r] = _mm256_setzero_ps();
    for (int b = 0; b < w.k_blocks; ++b) {
        const std::int8_t* blk = wq + b * block_bytes;
        __m256i lo[R], hi[R];
        for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_si256();
        for (int g = 0; g < groups; ++g) {
            // The panels lie one after another: ask for the line kQ8PrefetchBytes ahead (this
            // kernel spends enough instructions per byte that, left to the hardware prefetchers,
            // a decode step read 21 GB/s of a 33 GB/s DRAM).
            _mm_prefetch(reinterpret_cast<const char*>(blk + g * 64 + kQ8PrefetchBytes),
                         _MM_HINT_T0);
            const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + g * 64));
            const __m256i w1 =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + g * 64 + 32));
            for (int r = 0; r < R; ++r) {
                const std::int8_t* x = a.qa + (r0 + r) * a.lda_q + b * w.block + g * 4;
                const __m256i xb = _mm256_set1_epi32(load_i32(x));
                lo[r] = dot4(lo[r], w0, xb, ones);
                hi[r] = dot4(hi[r], w1, xb, ones);
            }
        }
        const __m256 dw_lo = _mm256_loadu_ps(ws + b * kQ8Panel);
        const __m256 dw_hi = _mm256_loadu_ps(ws + b * kQ8Panel + 8);
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

void q8_panel_avx2(const Q8PanelArgs& a) {
    x86::for_static_tiles<3>(a.rows,
                             [&](auto rows, int r) { panel_rows<decltype(rows)::value>(a, r); });
}

void q8_quantize_row_avx2(const float* x, int k, int block, std::int8_t* q, float* d,
                          std::int32_t* sums) {
    const int kb = (k + block - 1) / block;
    const int vecs = block / 8;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    alignas(32) float tail[128];
    for (int b = 0; b < kb; ++b) {
        const int k0 = b * block;
        const float* src = x + k0;
        if (k - k0 < block) {
            std::fill(tail, tail + block, 0.0f);
            std::copy(src, src + (k - k0), tail);
            src = tail;
        }
        __m256 amax = _mm256_setzero_ps();
        for (int i = 0; i < vecs; ++i)
            amax = _mm256_max_ps(amax, _mm256_and_ps(_mm256_loadu_ps(src + i * 8), abs_mask));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
        const float am = _mm_cvtss_f32(m4);
        if (!(am > 0.0f)) {
            std::memset(q + k0, 0, std::size_t(block));
            d[b] = 0.0f;
            sums[b] = 0;
            continue;
        }
        const __m256 inv = _mm256_set1_ps(127.0f / am);
        const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
        __m256i total = _mm256_setzero_si256();
        for (int i = 0; i < vecs; i += 4) {
            __m256i qi[4];
            for (int j = 0; j < 4; ++j) {
                qi[j] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src + (i + j) * 8), inv));
                qi[j] = _mm256_min_epi32(_mm256_max_epi32(qi[j], lo), hi);
                total = _mm256_add_epi32(total, qi[j]);
            }
            const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]),
                                                 _mm256_packs_epi32(qi[2], qi[3]));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + k0 + i * 8),
                                _mm256_permutevar8x32_epi32(p, order));
        }
        __m128i s4 =
            _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
        d[b] = am / 127.0f;
        sums[b] = _mm_cvtsi128_si32(s4);
    }
}

}  // namespace qvl::kernels::detail
