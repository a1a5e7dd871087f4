// The decode path shared by the AVX-512 attention kernels (attention_avx512.cpp, f32 products,
// and attention_avx512bf16.cpp, bf16 products): one query row and the NH (<= 4) heads of its
// group, keys in lanes for the scores. Each lane does exactly what a flash lane of
// x86/attention_flash.h does (the same 64-key blocks from lo, the same product order along
// head_dim and over the keys, the same softmax steps), so a row's result is bit-identical
// whichever path computes it (row invariance, kernels/attention.h); this path only skips the
// empty lanes of a one-row flash block (and, for bf16, the per-task K/V conversion).
//
// The skeleton is written once here; the products are supplied by a traits type D (below), as
// the flash driver's are. Everything a step does is always inlined into decode_row, so each
// tier compiles one function per (NH, element type) with its arrays in registers and on its
// stack.
//
// Traits D provide (all static):
//   kExpDegree                             the exp2 polynomial of the tier's flash tiles
//   template <int NH> struct Block         the query rows in the product's form and whatever
//                                          else a key block needs (bf16: its weights as pairs)
//   store_q<NH>(h, d, q, blk)              head h's query dims [d, d + 16), already scaled by
//                                          scale * log2(e)
//   scores16<NH>(a, k, nk, blk, acc)       acc[h] = the scores of nk (<= 16) keys whose first
//                                          row is k (rows k_row_stride apart; lanes >= nk 0)
//   weights<NH>(h, j0, nb, sub, s, blk)    s[0:nb] = 2^(s - sub) over the block (rounded up to
//                                          16), in whatever form accumulate reads
//   accumulate<NH>(a, vg, lo, hi, j0, nb, alpha, s, blk, o)
//                                          o[h] = o[h] * alpha[h] + P V over the block
//
// Included only by the AVX-512 attention files, after x86/attention_flash.h; everything is in
// an anonymous namespace, so the copies built with different -m flags never meet at link time.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/x86/attention_flash.h"
#include "kernels/x86/prefetch_rows.h"

namespace qvl::kernels::x86 {
namespace {

// What a decode row keeps between key blocks, per head.
template <int NH>
struct DecodeState {
    alignas(64) float o[NH][kMaxHeadDim];  // unnormalised output
    alignas(64) float s[NH][kKeyBlock];    // scores, then weights, of the current block
    float m[NH], l[NH], alpha[NH];
};

// The accumulate steps' P V accumulators over head dims [d0, d0 + 16 nv) (nv <= 4): the output
// so far times alpha[h], rounded before the first FMA as the flash tiles do, and back.
template <int NH>
[[gnu::always_inline]] inline void decode_load_output(const float (*o)[kMaxHeadDim],
                                                      const float* alpha, int d0, int nv,
                                                      __m512 (*acc)[4]) {
    for (int h = 0; h < NH; ++h) {
        const __m512 al = _mm512_set1_ps(alpha[h]);
        for (int v = 0; v < nv; ++v) {
            acc[h][v] = _mm512_mul_ps(_mm512_load_ps(o[h] + d0 + 16 * v), al);
        }
    }
}
template <int NH>
[[gnu::always_inline]] inline void decode_store_output(const __m512 (*acc)[4], int d0, int nv,
                                                       float (*o)[kMaxHeadDim]) {
    for (int h = 0; h < NH; ++h) {
        for (int v = 0; v < nv; ++v) _mm512_store_ps(o[h] + d0 + 16 * v, acc[h][v]);
    }
}

// The scores of key block [j0, j0 + nb), 16 keys at a time, with the K and V rows of the keys
// kDecodePrefetchKeys ahead asked into L2.
template <class D, int NH, class E>
[[gnu::always_inline]] inline void decode_scores(const AttentionArgs& a, const E* kg, const E* vg,
                                                 int j0, int nb, int hi,
                                                 const typename D::template Block<NH>& blk,
                                                 DecodeState<NH>* st) {
    const int hd = a.head_dim;
    for (int j = 0; j < nb; j += 16) {
        const int nk = std::min(16, nb - j);
        const int ahead = j0 + j + kDecodePrefetchKeys;
        prefetch_rows_l2(kg, a.k_row_stride, ahead, ahead + 16, hi, hd);
        prefetch_rows_l2(vg, a.v_row_stride, ahead, ahead + 16, hi, hd);
        __m512 acc[NH];
        D::template scores16<NH>(a, kg + std::ptrdiff_t(j0 + j) * a.k_row_stride, nk, blk, acc);
        for (int h = 0; h < NH; ++h) _mm512_store_ps(st->s[h] + j, acc[h]);
    }
}

// The online softmax step of the block's nb scores, per head: the flash lane's max chain in the
// same order, its rescale alpha, the weights (D::weights) and their sum added key by key.
template <class D, int NH>
[[gnu::always_inline]] inline void decode_softmax(int j0, int nb,
                                                  typename D::template Block<NH>* blk,
                                                  DecodeState<NH>* st) {
    for (int h = 0; h < NH; ++h) {
        float* s = st->s[h];
        float mx = st->m[h];
        for (int j = 0; j < nb; ++j) mx = mx > s[j] ? mx : s[j];
        const float sub = mx == -INFINITY ? 0.0f : mx;
        st->alpha[h] = _mm512_cvtss_f32(exp2_ps<D::kExpDegree>(_mm512_set1_ps(st->m[h] - sub)));
        D::template weights<NH>(h, j0, nb, _mm512_set1_ps(sub), s, blk);
        float sum = 0.0f;
        for (int j = 0; j < nb; ++j) sum += s[j];
        st->l[h] = std::fma(st->l[h], st->alpha[h], sum);
        st->m[h] = mx;
    }
}

template <class D, int NH, class E>
void decode_row(const AttentionArgs& a, int g, int row, int lo, int hi) {
    const int hd = a.head_dim;
    const E* kg = static_cast<const E*>(a.k) + g * a.k_head_stride;
    const E* vg = static_cast<const E*>(a.v) + g * a.v_head_stride;
    typename D::template Block<NH> blk;
    DecodeState<NH> st;
    const __m512 qscale = _mm512_set1_ps(a.scale * kLog2e);
    for (int h = 0; h < NH; ++h) {
        const float* qp = a.q + row * a.q_row_stride + (g * NH + h) * a.q_head_stride;
        for (int d = 0; d < hd; d += 16) {
            D::template store_q<NH>(h, d, _mm512_mul_ps(_mm512_loadu_ps(qp + d), qscale), &blk);
        }
        std::memset(st.o[h], 0, sizeof(float) * hd);
        st.m[h] = -INFINITY, st.l[h] = 0.0f;
    }
    for (int j0 = lo; j0 < hi; j0 += kKeyBlock) {
        const int nb = std::min(kKeyBlock, hi - j0);
        decode_scores<D, NH>(a, kg, vg, j0, nb, hi, blk, &st);
        decode_softmax<D, NH>(j0, nb, &blk, &st);
        D::template accumulate<NH>(a, vg, lo, hi, j0, nb, st.alpha, st.s, blk, st.o);
    }
    for (int h = 0; h < NH; ++h) {
        float* out = a.out + row * a.out_row_stride + (g * NH + h) * a.out_head_stride;
        const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_set1_ps(st.l[h]));
        for (int d = 0; d < hd; d += 16) {
            _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_load_ps(st.o[h] + d), inv));
        }
    }
}

// The flash driver's try_small (x86/attention_flash.h): a block of n rows whose n * group
// (head, row) items are at most 4 runs as decode rows, each with the kv-head group size (1, 2,
// 3, else 4) and the K/V element type (float or bf16 bits) as compile-time arguments.
template <class D>
bool decode_small(const AttentionArgs& a, int g, int group, int row0, int n_rows, int lo,
                  const int* hi) {
    if (n_rows * group > 4) return false;
    const auto rows = [&](auto elem) {
        using E = decltype(elem);
        for (int i = 0; i < n_rows; ++i) {
            switch (group) {
                case 1:
                    decode_row<D, 1, E>(a, g, row0 + i, lo, hi[i]);
                    break;
                case 2:
                    decode_row<D, 2, E>(a, g, row0 + i, lo, hi[i]);
                    break;
                case 3:
                    decode_row<D, 3, E>(a, g, row0 + i, lo, hi[i]);
                    break;
                default:
                    decode_row<D, 4, E>(a, g, row0 + i, lo, hi[i]);
                    break;
            }
        }
    };
    if (a.kv_type == KvType::kBF16) {
        rows(std::uint16_t{});
    } else {
        rows(float{});
    }
    return true;
}

}  // namespace
}  // namespace qvl::kernels::x86
