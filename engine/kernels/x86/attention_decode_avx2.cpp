// The AVX2 attention kernel's decode path (see x86/attention_avx2.cpp): one query row of
// incremental attention reads K and V in place, once for each pair of query heads, with the
// scores' head_dim in lanes, so that a decoded row equals the same row of a prefill bit for bit.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_plan.h"
#include "kernels/x86/attention_avx2_lanes.h"
#include "kernels/x86/prefetch_rows.h"

namespace qvl::kernels::avx2 {
namespace {

// Decode's V rows: bf16 ones in lane order too (load16_lanes), f32 ones in order. A dim's sum
// is the same whatever lane holds it; v_position says where dim d of the output ends up.
template <class E>
inline int v_position(int d, int hd) {
    return std::is_same_v<E, float> ? d : lane_position(d, hd);
}
inline __m256 load8_v(const float* row, int c, int /*hd*/) { return load8(row + c); }
inline __m256 load8_v(const std::uint16_t* row, int c, int hd) {
    const int c16 = c & ~15;
    if (c16 + 16 > hd) return load8(row + c);
    __m256 even, odd;
    load16_lanes(row, c16, &even, &odd);
    return c == c16 ? even : odd;
}
// s[r][0..4) = scores of the query rows q[r] (r < R <= 2; f32 in lane order, 32-byte aligned,
// already scaled) against the key rows k[0..4) (hd % 8 == 0 elements each, float or bf16 bits,
// in dim order: put in lane order as they load). Decode's form; the tiles use scores4x3.
template <int R, class E>
[[gnu::always_inline]] inline void scores4(const float* const (&q)[R], const E* const (&k)[4],
                                           int hd, float* const (&s)[R]) {
    __m256 acc[R][4];
    for (auto& row : acc) {
        for (auto& x : row) x = _mm256_setzero_ps();
    }
    int c = 0;
    for (; c + 16 <= hd; c += 16) {
        __m256 qe[R], qo[R];
        for (int r = 0; r < R; ++r) {
            qe[r] = _mm256_load_ps(q[r] + c);
            qo[r] = _mm256_load_ps(q[r] + c + 8);
        }
        for (int x = 0; x < 4; ++x) {
            __m256 even, odd;
            load16_lanes(k[x], c, &even, &odd);
            for (int r = 0; r < R; ++r) acc[r][x] = _mm256_fmadd_ps(qe[r], even, acc[r][x]);
            for (int r = 0; r < R; ++r) acc[r][x] = _mm256_fmadd_ps(qo[r], odd, acc[r][x]);
        }
    }
    if (c < hd) {  // a last chunk of 8 dims, in order
        __m256 kc[4];
        for (int x = 0; x < 4; ++x) kc[x] = load8(k[x] + c);
        for (int r = 0; r < R; ++r) {
            const __m256 qc = _mm256_load_ps(q[r] + c);
            for (int x = 0; x < 4; ++x) acc[r][x] = _mm256_fmadd_ps(qc, kc[x], acc[r][x]);
        }
    }
    for (int r = 0; r < R; ++r) {
        _mm_storeu_ps(s[r], reduce_keys4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
    }
}
// The rescale of a row's output when its running max goes from m_old to m_new, lane for lane
// what tile_softmax computes: 1 while nothing has been seen, 0 for the first keys, else
// exp2_ps(m_old - m_new).
inline float rescale(float m_old, float m_new) {
    if (m_new == -INFINITY) return 1.0f;
    if (m_old == -INFINITY) return 0.0f;
    return _mm256_cvtss_f32(exp2_ps(_mm256_set1_ps(m_old - m_new)));
}
// Decode: one query row. The P (1 or 2) heads of a pair share every K and V row load; for
// Qwen3-VL's two query heads per kv head K and V are read once per step. The steps below are
// always inlined into decode_heads, which keeps their arrays in registers and on its stack.
template <int P>
struct DecodeRow {
    alignas(32) float q[P][kMaxHd];  // q * scale * log2(e), in lane order
    alignas(32) float o[P][kMaxHd];  // unnormalised output
    alignas(32) float s[P][kKeys];   // scores, then weights, of the current block
    float m[P], l[P], alpha[P];
};

template <int P>
[[gnu::always_inline]] inline void decode_begin(const AttentionArgs& a, int h0, int row,
                                                DecodeRow<P>* d) {
    const int hd = a.head_dim;
    const float qscale = a.scale * kLog2e;
    for (int p = 0; p < P; ++p) {
        const float* src = a.q + std::ptrdiff_t(row) * a.q_row_stride + (h0 + p) * a.q_head_stride;
        for (int i = 0; i < hd; ++i) d->q[p][q_position(a, i)] = src[i] * qscale;
        std::fill(d->o[p], d->o[p] + hd, 0.0f);
        d->m[p] = -INFINITY;
        d->l[p] = 0.0f;
    }
}

// Scores of keys [j0, j0 + nk) (kg, vg: the kv head's K and V) four keys at a time with
// head_dim in lanes, as tile_scores_rows computes them, so decode rows come out bit-identical
// to prefill rows; each K row chunk is loaded once for all P heads. Keys past nk (up to a
// multiple of 8) repeat the last key, in bounds; their weights are masked by decode_softmax.
template <int P, class E>
[[gnu::always_inline]] inline void decode_scores(const AttentionArgs& a, const E* kg, const E* vg,
                                                 int j0, int nk, int hi, DecodeRow<P>* d) {
    const int hd = a.head_dim;
    const E* const kb = kg + std::ptrdiff_t(j0) * a.k_row_stride;
    const auto key_row = [&](int j) {
        return kb + std::ptrdiff_t(std::min(j, nk - 1)) * a.k_row_stride;
    };
    for (int j = 0; j < (nk + 7) / 8 * 8; j += 4) {
        // The next block's K and V rows, into L2 (x86/prefetch_rows.h): the hardware
        // prefetchers restart at every switch between the K and V streams, and into L1 for this
        // block only was slower (bench/README.md, kernel design measurements).
        x86::prefetch_rows_l2(vg, a.v_row_stride, j0 + kKeys + j, j0 + kKeys + j + 4, hi, hd);
        x86::prefetch_rows_l2(kg, a.k_row_stride, j0 + kKeys + j, j0 + kKeys + j + 4, hi, hd);
        const E* const k[4] = {key_row(j), key_row(j + 1), key_row(j + 2), key_row(j + 3)};
        float* s_at[P];
        const float* q_at[P];
        for (int p = 0; p < P; ++p) s_at[p] = d->s[p] + j, q_at[p] = d->q[p];
        scores4<P>(q_at, k, hd, s_at);
    }
}

// Online softmax per head over the block's nk scores; lanes past nk get weight 0.
template <int P>
[[gnu::always_inline]] inline void decode_softmax(int nk, DecodeRow<P>* d) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int n_vec = (nk + 7) / 8;
    for (int p = 0; p < P; ++p) {
        float* s = d->s[p];
        __m256 mx = _mm256_set1_ps(-INFINITY);
        __m256 valid[kKeys / 8];
        for (int v = 0; v < n_vec; ++v) {
            const __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(8 * v));
            valid[v] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(nk), idx));
            mx = _mm256_max_ps(mx, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY),
                                                    _mm256_load_ps(s + 8 * v), valid[v]));
        }
        const float m_new = std::max(d->m[p], hmax(mx));
        const __m256 m_vec = _mm256_set1_ps(m_new);
        __m256 sum = _mm256_setzero_ps();
        for (int v = 0; v < n_vec; ++v) {
            const __m256 e =
                _mm256_and_ps(exp2_ps(_mm256_sub_ps(_mm256_load_ps(s + 8 * v), m_vec)), valid[v]);
            _mm256_store_ps(s + 8 * v, e);
            sum = _mm256_add_ps(sum, e);
        }
        d->alpha[p] = rescale(d->m[p], m_new);
        d->l[p] = std::fma(d->l[p], d->alpha[p], hsum(sum));  // as in tile_softmax
        d->m[p] = m_new;
    }
}

// o = o * alpha + P V over the block's nk V rows from v0, 32 lane positions at a time (bf16 V
// rows in lane order: see v_position): each V row chunk is loaded once for all heads.
template <int P, class E>
[[gnu::always_inline]] inline void decode_accumulate(const AttentionArgs& a, const E* v0, int nk,
                                                     DecodeRow<P>* d) {
    const int hd = a.head_dim;
    int c = 0;
    for (; c + 32 <= hd; c += 32) {
        __m256 acc[P][4];
        for (int p = 0; p < P; ++p) {
            for (int w = 0; w < 4; ++w) {
                acc[p][w] =
                    _mm256_mul_ps(_mm256_load_ps(d->o[p] + c + 8 * w), _mm256_set1_ps(d->alpha[p]));
            }
        }
        for (int jj = 0; jj < nk; ++jj) {
            const E* vr = v0 + std::ptrdiff_t(jj) * a.v_row_stride + c;
            __m256 vv[4];
            if constexpr (std::is_same_v<E, std::uint16_t>) {
                load16_lanes(vr, 0, &vv[0], &vv[1]);
                load16_lanes(vr, 16, &vv[2], &vv[3]);
            } else {
                for (int w = 0; w < 4; ++w) vv[w] = load8(vr + 8 * w);
            }
            for (int p = 0; p < P; ++p) {
                const __m256 w8 = _mm256_broadcast_ss(&d->s[p][jj]);
                for (int w = 0; w < 4; ++w) acc[p][w] = _mm256_fmadd_ps(w8, vv[w], acc[p][w]);
            }
        }
        for (int p = 0; p < P; ++p) {
            for (int w = 0; w < 4; ++w) _mm256_store_ps(d->o[p] + c + 8 * w, acc[p][w]);
        }
    }
    for (; c < hd; c += 8) {
        __m256 acc[P];
        for (int p = 0; p < P; ++p) {
            acc[p] = _mm256_mul_ps(_mm256_load_ps(d->o[p] + c), _mm256_set1_ps(d->alpha[p]));
        }
        for (int jj = 0; jj < nk; ++jj) {
            const __m256 vv = load8_v(v0 + std::ptrdiff_t(jj) * a.v_row_stride, c, hd);
            for (int p = 0; p < P; ++p) {
                acc[p] = _mm256_fmadd_ps(_mm256_broadcast_ss(&d->s[p][jj]), vv, acc[p]);
            }
        }
        for (int p = 0; p < P; ++p) _mm256_store_ps(d->o[p] + c, acc[p]);
    }
}

template <int P, class E>
void decode_heads(const AttentionArgs& a, int g, int h0, int row, int lo, int hi) {
    const int hd = a.head_dim;
    DecodeRow<P> d;
    decode_begin<P>(a, h0, row, &d);
    const E* kg = static_cast<const E*>(a.k) + g * a.k_head_stride;
    const E* vg = static_cast<const E*>(a.v) + g * a.v_head_stride;
    x86::prefetch_rows(kg, a.k_row_stride, lo, lo + kKeys, hi, hd);
    for (int j0 = lo; j0 < hi; j0 += kKeys) {
        const int nk = std::min(kKeys, hi - j0);
        decode_scores<P, E>(a, kg, vg, j0, nk, hi, &d);
        decode_softmax<P>(nk, &d);
        decode_accumulate<P, E>(a, vg + std::ptrdiff_t(j0) * a.v_row_stride, nk, &d);
    }
    for (int p = 0; p < P; ++p) {
        float* out = a.out + std::ptrdiff_t(row) * a.out_row_stride + (h0 + p) * a.out_head_stride;
        const float inv = 1.0f / d.l[p];
        for (int i = 0; i < hd; ++i) out[i] = d.o[p][v_position<E>(i, hd)] * inv;
    }
}

template <class E>
void decode_run_task(const AttentionArgs& a, const AttentionTask& t) {
    const int group = a.n_heads / attention_kv_heads(a);
    for (int r = t.row_begin; r < t.row_end; ++r) {
        int lo, hi;
        attention_key_range(a, r, &lo, &hi);
        int h = t.kv_head * group;
        const int h_end = h + group;
        if (hi <= lo) {
            for (; h < h_end; ++h) {
                float* out = a.out + std::ptrdiff_t(r) * a.out_row_stride + h * a.out_head_stride;
                std::fill(out, out + a.head_dim, 0.0f);
            }
            continue;
        }
        for (; h + 2 <= h_end; h += 2) decode_heads<2, E>(a, t.kv_head, h, r, lo, hi);
        if (h < h_end) decode_heads<1, E>(a, t.kv_head, h, r, lo, hi);
    }
}

}  // namespace

void decode_attention_task(const AttentionArgs& a, const AttentionTask& t) {
    if (a.kv_type == KvType::kBF16) {
        decode_run_task<std::uint16_t>(a, t);
    } else {
        decode_run_task<float>(a, t);
    }
}

}  // namespace qvl::kernels::avx2
