// Int8-weight GEMM panel kernels on AVX2 (plain AVX2 + FMA, no VNNI); the f32 block chain is the
// one in kernels/gemm_q8.h, so results equal the other tiers'. Two ways to the exact integer sum
// of a block's products:
// - int8: vpmaddubsw needs one unsigned operand, so the sign moves onto the activations (|w|
//   times x·sign(w), at most 2·127·127 per pair: no int16 saturation), then vpmaddwd widens to
//   int32;
// - f32 FMAs over both operands widened to float (isa.h q8_fma_for_gemm): each product is an
//   integer of magnitude at most 127·127 < 2^14 and a block (at most 128 of them) sums to less
//   than 2^21, so every partial sum is an integer that f32 holds exactly, in any order.
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
            // kernel spends enough instructions per byte that the hardware prefetchers fall
            // behind DRAM; bench/README.md, kernel design measurements).
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

// Rows per tile of the FMA kernel: 12 block sums, 2 weight vectors and a broadcast in 15
// registers.
constexpr int kFmaTileRows = 6;

// R rows x 16 columns of one panel and chunk on FMAs, the rows widened as one tile (the layout
// of q8_widen_rows_avx2). Per block: 2R block sums from zero, then the block chain on the running
// sums in memory.
template <int R>
void fma_rows(const Q8FmaArgs& a, int r0) {
    const float* x = a.x + r0 * a.ldx;
    float* acc = a.acc + r0 * kQ8Panel;
    const int block = a.block;
    for (int b = 0; b < a.blocks; ++b) {
        const float* w = a.w + std::ptrdiff_t(b) * block * kQ8Panel;
        const float* xb = x + std::ptrdiff_t(b) * block * R;
        __m256 lo[R], hi[R];
        for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
#pragma GCC unroll 2
        for (int i = 0; i < block; ++i) {
            const __m256 w0 = _mm256_load_ps(w + i * kQ8Panel);
            const __m256 w1 = _mm256_load_ps(w + i * kQ8Panel + 8);
            for (int r = 0; r < R; ++r) {
                const __m256 xr = _mm256_broadcast_ss(xb + i * R + r);
                lo[r] = _mm256_fmadd_ps(w0, xr, lo[r]);
                hi[r] = _mm256_fmadd_ps(w1, xr, hi[r]);
            }
        }
        const __m256 dw_lo = _mm256_loadu_ps(a.ws + b * kQ8Panel);
        const __m256 dw_hi = _mm256_loadu_ps(a.ws + b * kQ8Panel + 8);
        for (int r = 0; r < R; ++r) {
            const __m256 da = _mm256_set1_ps(a.da[std::ptrdiff_t(r0 + r) * a.ld_da + b]);
            float* c = acc + r * kQ8Panel;
            _mm256_storeu_ps(c,
                             _mm256_fmadd_ps(_mm256_mul_ps(lo[r], dw_lo), da, _mm256_loadu_ps(c)));
            _mm256_storeu_ps(
                c + 8, _mm256_fmadd_ps(_mm256_mul_ps(hi[r], dw_hi), da, _mm256_loadu_ps(c + 8)));
        }
    }
}

}  // namespace

void q8_panel_fma_avx2(const Q8FmaArgs& a) {
    x86::for_static_tiles<kFmaTileRows>(
        a.rows, [&](auto rows, int r) { fma_rows<decltype(rows)::value>(a, r); });
}

void q8_widen_panel_avx2(const Q8Matrix& w, int panel, int k0, int kc, float* out) {
    // A panel's blocks lie one after another, so k's group of 4 (64 bytes: 4 bytes of each of
    // the 16 columns) is at k / 4 · 64.
    const std::int8_t* src = w.q + std::ptrdiff_t(panel) * w.k_blocks * w.block * kQ8Panel +
                             std::ptrdiff_t(k0) * kQ8Panel;
    // Within each 16-byte lane (4 columns x 4 k), k-major: dword t = the 4 columns' k = t.
    const __m256i k_major = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                             0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int g = 0; g < kc / 4; ++g) {
        const __m256i v[2] = {
            _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + g * 64)),
                                k_major),
            _mm256_shuffle_epi8(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + g * 64 + 32)), k_major)};
        float* o = out + std::ptrdiff_t(g) * 4 * kQ8Panel;
        for (int t = 0; t < 4; ++t) {
            // Dword t of each lane: 8 columns' k = 4g + t.
            const __m256i pick = _mm256_setr_epi32(t, t + 4, 0, 0, 0, 0, 0, 0);
            for (int h = 0; h < 2; ++h) {
                const __m128i bytes =
                    _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v[h], pick));
                _mm256_store_ps(o + t * kQ8Panel + h * 8,
                                _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)));
            }
        }
    }
}

void q8_widen_rows_avx2(const std::int8_t* q, std::ptrdiff_t ldq, int rows, int k0, int kc,
                        float* out) {
    // Tile by tile, as q8_panel_fma_avx2 splits the rows: k-major inside a tile, so the kernel
    // broadcasts its R values of one k from one place.
    x86::for_static_tiles<kFmaTileRows>(rows, [&](auto tile_rows, int r0) {
        constexpr int R = decltype(tile_rows)::value;
        float* o = out + std::ptrdiff_t(r0) * kc;
        for (int r = 0; r < R; ++r) {
            const std::int8_t* s = q + (r0 + r) * ldq + k0;
            for (int i = 0; i < kc; ++i) o[i * R + r] = float(s[i]);
        }
    });
}

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
    // The last, partial block, up to a row-long one (q8_row_block). On the stack: decode calls
    // this, and a std::vector here would emit its AVX2-compiled members as symbols the baseline
    // tier shares (isa_symbol_isolation).
    alignas(32) float tail[kQ8MaxBlock];
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
