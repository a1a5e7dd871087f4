// Peak loops built with AVX-512 + AVX512_BF16 flags; called only where the CPU has them.
// 24 independent accumulators cover the FMA and vdpbf16ps latencies on two pipes.
// GCC 12 reports its own _mm512_undefined_*() helpers as uninitialised once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace qvl::bench::avx512bf16 {

// Returns a value depending on every accumulator so the loop cannot be removed.
float fma_loop_zmm(std::int64_t iters) {
    __m512 acc[24];
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_ps(float(i));
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-6f);
    for (std::int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    }
    __m512 s = acc[0];
    for (int i = 1; i < 24; ++i) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

float bf16_loop_zmm(std::int64_t iters) {
    __m512 acc[24];
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_setzero_ps();
    const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
    const __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(-1e-3f), _mm512_set1_ps(1e-3f));
    for (std::int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
    }
    __m512 s = acc[0];
    for (int i = 1; i < 24; ++i) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

// Streams bytes [0, n) (n a multiple of 256) with four independent OR chains.
std::uint64_t read_loop_zmm(const std::byte* p, std::size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (std::size_t i = 0; i < n; i += 256) {
        a0 = _mm512_or_si512(a0, _mm512_load_si512(p + i));
        a1 = _mm512_or_si512(a1, _mm512_load_si512(p + i + 64));
        a2 = _mm512_or_si512(a2, _mm512_load_si512(p + i + 128));
        a3 = _mm512_or_si512(a3, _mm512_load_si512(p + i + 192));
    }
    const __m512i s = _mm512_or_si512(_mm512_or_si512(a0, a1), _mm512_or_si512(a2, a3));
    return std::uint64_t(_mm512_reduce_or_epi64(s));
}

}  // namespace qvl::bench::avx512bf16
