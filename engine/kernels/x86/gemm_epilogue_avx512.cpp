// AVX-512 GEMM epilogue: bias, activation, residual (or the SwiGLU product) over 16 lanes with
// masked tails. exp is evaluated to about 1 ulp (Cody-Waite reduction, degree-7 polynomial,
// scalef); SiLU and GELU-tanh are written as u / (1 + exp(-t)), which has no cancellation
// anywhere (GELU-tanh: 0.5·u·(1 + tanh z) = u / (1 + e^(-2z))); the erf form goes through erfc.
// GCC 12's AVX-512 intrinsic headers build _mm512_undefined_*() from a self-initialised variable,
// which -W(maybe-)uninitialized reports once inlined here; the value is never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstddef>

#include "kernels/gemm_internal.h"
#include "kernels/x86/avx512_util.h"

namespace qvl::kernels::avx512 {
namespace {

__m512 exp_ps(__m512 x) {
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512 ln2_hi = _mm512_set1_ps(0.693145751953125f);
    const __m512 ln2_lo = _mm512_set1_ps(1.42860682030941723212e-6f);
    // Beyond +-104 the result is 0 or inf anyway; clamping keeps n representable.
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(104.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT);
    __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);
    r = _mm512_fnmadd_ps(n, ln2_lo, r);
    // e^r on |r| <= ln2/2: Taylor to degree 7 (truncation below 6e-9 relative).
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

// u / (1 + e^(-t)).
__m512 times_sigmoid(__m512 u, __m512 t) {
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), t));
    return _mm512_div_ps(u, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

__m512 silu_ps(__m512 u) { return times_sigmoid(u, u); }

__m512 gelu_tanh_ps(__m512 u) {
    const __m512 c = _mm512_set1_ps(2.0f * 0.79788456080286535588f);
    const __m512 u3 = _mm512_mul_ps(_mm512_mul_ps(u, u), u);
    const __m512 inner = _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), u3, u);
    return times_sigmoid(u, _mm512_mul_ps(c, inner));
}

// 0.5·u·(1 + erf(x)), x = u/√2, through erfc(|x|) so the negative side keeps its relative
// accuracy: erfc(z) = t·exp(-z² + P(t)), t = 1/(1 + z/2), with the Chebyshev-fitted P of
// Numerical Recipes' erfcc (fractional error below 1.2e-7 for all z >= 0).
__m512 gelu_erf_ps(__m512 u) {
    const __m512 x = _mm512_mul_ps(u, _mm512_set1_ps(0.70710678118654752440f));
    const __m512 z = _mm512_abs_ps(x);
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.5f), z, one));
    __m512 p = _mm512_set1_ps(0.17087277f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
    // -z² + P in one rounding.
    const __m512 erfc = _mm512_mul_ps(t, exp_ps(_mm512_fnmadd_ps(z, z, p)));
    const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512 one_plus_erf =
        _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(2.0f), erfc), erfc);
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), u), one_plus_erf);
}

}  // namespace
}  // namespace qvl::kernels::avx512

namespace qvl::kernels::detail {

void gemm_epilogue_avx512(const GemmArgs& p, const float* acc, const float* acc2,
                          std::ptrdiff_t ld_acc, int m0, int m1, int n0, int n1) {
    using namespace avx512;
    const int n = n1 - n0;
    // Output (and residual) rows a few ahead, asked for now: each row segment is only a few cache
    // lines, rows are far apart, and the hardware prefetchers do not follow; without this every
    // store waits for its line to be read for ownership.
    constexpr int kAhead = 4;
    const int pf_bytes = std::min(n, 256) * int(sizeof(float));
    const auto prefetch_row = [&](int i) {
        const char* c = reinterpret_cast<const char*>(p.c + std::ptrdiff_t(i) * p.ldc + n0);
        const char* r =
            p.residual != nullptr
                ? reinterpret_cast<const char*>(p.residual + std::ptrdiff_t(i) * p.ldr + n0)
                : nullptr;
        for (int b = 0; b < pf_bytes; b += 64) {
            __builtin_prefetch(c + b, 1, 3);
            if (r != nullptr && r != reinterpret_cast<const char*>(c))
                __builtin_prefetch(r + b, 0, 3);
        }
    };
    for (int i = m0; i < std::min(m1, m0 + kAhead); ++i) prefetch_row(i);
    for (int i = m0; i < m1; ++i) {
        if (i + kAhead < m1) prefetch_row(i + kAhead);
        const float* s = acc + std::ptrdiff_t(i - m0) * ld_acc;
        float* c = p.c + std::ptrdiff_t(i) * p.ldc + n0;
        if (p.w_up != nullptr) {
            const float* up = acc2 + std::ptrdiff_t(i - m0) * ld_acc;
            for (int j = 0; j < n; j += 16) {
                const __mmask16 mask = x86::lanes16(n - j);
                const __m512 g = _mm512_maskz_loadu_ps(mask, s + j);
                const __m512 u = _mm512_maskz_loadu_ps(mask, up + j);
                _mm512_mask_storeu_ps(c + j, mask, _mm512_mul_ps(silu_ps(g), u));
            }
            continue;
        }
        const float* bias = p.bias != nullptr ? p.bias + n0 : nullptr;
        const float* r =
            p.residual != nullptr ? p.residual + std::ptrdiff_t(i) * p.ldr + n0 : nullptr;
        for (int j = 0; j < n; j += 16) {
            const __mmask16 mask = x86::lanes16(n - j);
            __m512 v = _mm512_maskz_loadu_ps(mask, s + j);
            if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias + j));
            switch (p.act) {
                case GemmActivation::kNone:
                    break;
                case GemmActivation::kGeluTanh:
                    v = gelu_tanh_ps(v);
                    break;
                case GemmActivation::kGeluErf:
                    v = gelu_erf_ps(v);
                    break;
                case GemmActivation::kSilu:
                    v = silu_ps(v);
                    break;
            }
            if (r != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, r + j));
            _mm512_mask_storeu_ps(c + j, mask, v);
        }
    }
}

}  // namespace qvl::kernels::detail
