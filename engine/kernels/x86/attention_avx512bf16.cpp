// AVX512_BF16 attention (kernels/attention.h, AttentionArgs::round_bf16): the flash driver of
// x86/attention_flash.h with both products on vdpbf16ps. Q (already scaled), K, the softmax
// weights P and V are rounded to bf16 (round to nearest even); the scores, the online softmax
// and the output accumulate in f32. One vdpbf16ps does the work of two f32 FMAs, and the
// products are ~70 % of the work, so a key block costs a bit over half of the f32 kernel's.
//
// Operand layouts, all bf16 pairs in 32-bit lanes (low half = the first of the pair):
//   Qt2[d/2][item]   pairs along head_dim    (per flash block, from the f32 Qt)
//   K2[key][d/2]     pairs along head_dim    (per task, for all the keys it reads)
//   V2[key/2][d]     pairs of keys (2i, 2i+1) (per task; keys it does not read are zero)
//   Pt2[key/2][item] pairs of adjacent keys  (per flash block and key block)
// so St = K2 · Qt2 broadcasts a K2 pair against 32 items, and Ot += V2 · Pt2 a V2 pair.
// bf16 K/V (the KV arena outside f32 precision) already hold what the rounding would give, so
// they are copied as they are: the same numbers as from f32 K/V, reading half the bytes.
// GCC 12's AVX-512 intrinsic headers build _mm512_undefined_*() from a self-initialised variable,
// which -W(maybe-)uninitialized reports once inlined here; the value is never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/scratch.h"
#include "kernels/x86/attention_decode.h"
#include "kernels/x86/attention_flash.h"
#include "kernels/x86/tier_entries.h"

namespace qvl::kernels::avx512bf16 {
namespace {

using namespace x86;

// 16 + 16 bf16 values (lo[0..15], hi[0..15]) interleaved: lane i = (lo[i], hi[i]).
inline __m512i interleave16(__m512i both) {
    const __m512i interleave =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(interleave, both);
}

// 16 + 16 f32 values rounded to bf16 and interleaved: lane i = (lo[i], hi[i]).
inline __m512i pairs16(__m512 lo, __m512 hi) {
    return interleave16(__m512i(_mm512_cvtne2ps_pbh(hi, lo)));
}

// The same from 16 + 16 bf16 values (null: zeros), which need no rounding.
inline __m512i pairs16(const std::uint16_t* lo, const std::uint16_t* hi) {
    const __m256i l = lo != nullptr ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo))
                                    : _mm256_setzero_si256();
    const __m256i h = hi != nullptr ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi))
                                    : _mm256_setzero_si256();
    return interleave16(_mm512_inserti64x4(_mm512_castsi256_si512(l), h, 1));
}

// 2 x 16 consecutive K elements as 16 bf16 pairs (f32 rounded, bf16 as they are); n = 16 or
// 32 elements (the upper half zero for 16).
inline __m512 k_pairs(const float* p, int n) {
    if (n == 32) return __m512(_mm512_cvtne2ps_pbh(_mm512_loadu_ps(p + 16), _mm512_loadu_ps(p)));
    return _mm512_castsi512_ps(
        _mm512_zextsi256_si512(__m256i(_mm512_cvtneps_pbh(_mm512_loadu_ps(p)))));
}
inline __m512 k_pairs(const std::uint16_t* p, int n) {
    if (n == 32) return _mm512_castsi512_ps(_mm512_loadu_si512(p));
    return _mm512_castsi512_ps(
        _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
}

// St[r][0:32] = sum_p K2[r][p] · Qt2[p][0:32] for r < MR (p over head_dim / 2 pairs).
template <int MR>
inline void qk_tile(const std::uint32_t* k2, int pairs, const std::uint32_t* qt2, float* st) {
    __m512 acc0[MR], acc1[MR];
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int p = 0; p < pairs; ++p) {
        const __m512bh b0 = __m512bh(_mm512_load_si512(qt2 + p * kItems));
        const __m512bh b1 = __m512bh(_mm512_load_si512(qt2 + p * kItems + 16));
#pragma GCC unroll 12
        for (int r = 0; r < MR; ++r) {
            const __m512bh av = __m512bh(_mm512_set1_epi32(int(k2[r * pairs + p])));
            acc0[r] = _mm512_dpbf16_ps(acc0[r], av, b0);
            acc1[r] = _mm512_dpbf16_ps(acc1[r], av, b1);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
        _mm512_store_ps(st + r * kItems, acc0[r]);
        _mm512_store_ps(st + r * kItems + 16, acc1[r]);
    }
}

void qk_rows(const std::uint32_t* k2, int pairs, const std::uint32_t* qt2, int n, float* st) {
    for_static_tiles<kKeyTile>(n, [&](auto mr, int j) {
        qk_tile<decltype(mr)::value>(k2 + j * pairs, pairs, qt2, st + j * kItems);
    });
}

// Ot[r][0:32] = Ot[r][0:32] * alpha + sum_p V2[p][r] · Pt2[p][0:32] for r < 8 head dims,
// p < key_pairs (alpha is al0 for lanes 0-15, al1 for 16-31).
template <bool kRescale>
inline void pv_tile(const std::uint32_t* v2, int hd, const std::uint32_t* pt2, int key_pairs,
                    __m512 al0, __m512 al1, float* ot) {
    __m512 acc0[8], acc1[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
        acc0[r] = _mm512_load_ps(ot + r * kItems);
        acc1[r] = _mm512_load_ps(ot + r * kItems + 16);
        if constexpr (kRescale) {
            acc0[r] = _mm512_mul_ps(acc0[r], al0);
            acc1[r] = _mm512_mul_ps(acc1[r], al1);
        }
    }
#pragma GCC unroll 4
    for (int p = 0; p < key_pairs; ++p) {
        const __m512bh b0 = __m512bh(_mm512_load_si512(pt2 + p * kItems));
        const __m512bh b1 = __m512bh(_mm512_load_si512(pt2 + p * kItems + 16));
        const std::uint32_t* vp = v2 + p * hd;
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) {
            const __m512bh av = __m512bh(_mm512_set1_epi32(int(vp[r])));
            acc0[r] = _mm512_dpbf16_ps(acc0[r], av, b0);
            acc1[r] = _mm512_dpbf16_ps(acc1[r], av, b1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
        _mm512_store_ps(ot + r * kItems, acc0[r]);
        _mm512_store_ps(ot + r * kItems + 16, acc1[r]);
    }
}

// Decode path (x86/attention_decode.h): bf16 products as the flash tiles take them (the same
// roundings, the same vdpbf16ps pairs in the same order), head dims in lanes for P V. It is
// slower than the AVX2 tier's path on the same CPU (head_dim in lanes, x86/attention_avx2.cpp)
// and the 16x16 transposes of K are most of the difference on one thread. Taking head_dim in
// lanes here would change the score arithmetic, so the flash tiles of text prefill would have
// to change with it to keep rows bit-identical; a K layout blocked by 16 keys in the KV arena
// would remove the transposes and keep the arithmetic, but touches every reader of the arena.
// Either buys a few % of a decode step (the measurements: bench/README.md, kernel design).
struct Bf16Decode {
    static constexpr int kExpDegree = 3;  // as the bf16 flash tiles (Bf16Tiles)

    template <int NH>
    struct Block {
        alignas(64) std::uint32_t q2[NH][kMaxHeadDim / 2];
        // bf16 weights of the block, one leading zero when the block starts at an odd key
        // (pairs are anchored at even keys, as in V2), room for a 16-wide store past the end.
        alignas(64) std::uint16_t pw[NH][kKeyBlock + 2 + 16];
    };

    template <int NH>
    [[gnu::always_inline]] static void store_q(int h, int d, __m512 q, Block<NH>* b) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(b->q2[h] + d / 2),
                           __m256i(_mm512_cvtneps_pbh(q)));
    }

    template <int NH, class E>
    [[gnu::always_inline]] static void scores16(const AttentionArgs& a, const E* k, int nk,
                                                const Block<NH>& b, __m512 acc[NH]) {
        const int hd = a.head_dim;
        const __m512 zero = _mm512_setzero_ps();
        for (int h = 0; h < NH; ++h) acc[h] = zero;
        for (int c = 0; c < hd / 2; c += 16) {  // 16 pairs (32 head dims) per transpose
            const int np = std::min(16, hd / 2 - c);
            __m512 kt[16];
            for (int r = 0; r < 16; ++r) {
                const E* kp = k + std::ptrdiff_t(r) * a.k_row_stride + 2 * c;
                kt[r] = r < nk ? k_pairs(kp, 2 * np) : zero;
            }
            transpose16(kt);
            for (int pp = 0; pp < np; ++pp) {
                const __m512bh kb = __m512bh(kt[pp]);
                for (int h = 0; h < NH; ++h) {
                    acc[h] = _mm512_dpbf16_ps(acc[h], kb,
                                              __m512bh(_mm512_set1_epi32(int(b.q2[h][c + pp]))));
                }
            }
        }
    }

    // The weights in f32 (for their sum) and as bf16 into pw, lanes past nb zero.
    template <int NH>
    [[gnu::always_inline]] static void weights(int h, int j0, int nb, __m512 sub, float* s,
                                               Block<NH>* b) {
        const int first = j0 & 1;
        std::memset(b->pw[h], 0, sizeof b->pw[h]);
        for (int j = 0; j < nb; j += 16) {
            const __mmask16 valid =
                nb - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (nb - j)) - 1);
            const __m512 p = _mm512_maskz_mov_ps(
                valid, exp2_ps<kExpDegree>(_mm512_sub_ps(_mm512_load_ps(s + j), sub)));
            _mm512_store_ps(s + j, p);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(b->pw[h] + first + j),
                                __m256i(_mm512_cvtneps_pbh(p)));
        }
    }

    template <int NH, class E>
    [[gnu::always_inline]] static void accumulate(const AttentionArgs& a, const E* vg, int lo,
                                                  int hi, int j0, int nb, const float* alpha,
                                                  const float (* /*s*/)[kKeyBlock],
                                                  const Block<NH>& b, float (*o)[kMaxHeadDim]) {
        const int hd = a.head_dim;
        const __m512 zero = _mm512_setzero_ps();
        const int first = j0 & 1;
        const int key_pairs = (first + nb + 1) / 2;
        const int k0 = j0 - first;  // even
        auto v_pairs = [&](int key, int d) {
            if constexpr (std::is_same_v<E, float>) {
                auto row = [&](int k) {
                    return k >= lo && k < hi
                               ? _mm512_loadu_ps(vg + std::ptrdiff_t(k) * a.v_row_stride + d)
                               : zero;
                };
                return pairs16(row(key), row(key + 1));
            } else {
                auto row = [&](int k) {
                    return k >= lo && k < hi ? vg + std::ptrdiff_t(k) * a.v_row_stride + d
                                             : nullptr;
                };
                return pairs16(row(key), row(key + 1));
            }
        };
        for (int d0 = 0; d0 < hd; d0 += 64) {
            const int nv = std::min(4, (hd - d0) / 16);
            __m512 acc[NH][4];
            decode_load_output<NH>(o, alpha, d0, nv, acc);
            for (int p = 0; p < key_pairs; ++p) {
                const int key = k0 + 2 * p;
                __m512bh pb[NH];
                for (int h = 0; h < NH; ++h) {
                    std::uint32_t word;
                    std::memcpy(&word, b.pw[h] + 2 * p, sizeof word);
                    pb[h] = __m512bh(_mm512_set1_epi32(int(word)));
                }
                for (int v = 0; v < nv; ++v) {
                    const int d = d0 + 16 * v;
                    const __m512bh vv = __m512bh(v_pairs(key, d));
                    for (int h = 0; h < NH; ++h) acc[h][v] = _mm512_dpbf16_ps(acc[h][v], vv, pb[h]);
                }
            }
            decode_store_output<NH>(acc, d0, nv, o);
        }
    }
};

// begin_task's conversion for bf16 K/V, keys [base, end) with those outside [key_lo, key_hi)
// zero: K2 rows are the K rows as they are, V2 pairs interleave two V rows.
void copy_task_kv(const AttentionArgs& a, int g, int key_lo, int key_hi, int base, int end,
                  std::uint32_t* k2, std::uint32_t* v2) {
    const int hd = a.head_dim;
    const auto* kg = static_cast<const std::uint16_t*>(a.k) + g * a.k_head_stride;
    const auto* vg = static_cast<const std::uint16_t*>(a.v) + g * a.v_head_stride;
    auto visible = [&](int key) { return key >= key_lo && key < key_hi; };
    for (int key = base; key < end; ++key) {
        std::uint32_t* dst = k2 + std::size_t(key - base) * (hd / 2);
        if (visible(key)) {
            std::memcpy(dst, kg + std::ptrdiff_t(key) * a.k_row_stride, sizeof(std::uint16_t) * hd);
        } else {
            std::memset(dst, 0, sizeof(std::uint16_t) * hd);
        }
    }
    for (int key = base; key < end; key += 2) {
        std::uint32_t* dst = v2 + std::size_t(key - base) / 2 * hd;
        const std::uint16_t* r0 =
            visible(key) ? vg + std::ptrdiff_t(key) * a.v_row_stride : nullptr;
        const std::uint16_t* r1 =
            visible(key + 1) ? vg + std::ptrdiff_t(key + 1) * a.v_row_stride : nullptr;
        for (int c = 0; c < hd; c += 16) {
            _mm512_store_si512(dst + c, pairs16(r0 != nullptr ? r0 + c : nullptr,
                                                r1 != nullptr ? r1 + c : nullptr));
        }
    }
}

// Traits of the shared flash driver (x86/attention_flash.h) for bf16 products.
struct Bf16Tiles {
    static constexpr int kExpDegree = Bf16Decode::kExpDegree;  // one polynomial for both paths

    struct Operands {
        alignas(64) std::uint32_t qt2[kBatch][kMaxHeadDim / 2 * kItems];
        // An odd block start adds a pair in front (its first key has weight zero).
        alignas(64) std::uint32_t pt2[(kKeyBlock / 2 + 1) * kItems];
        // The task's keys [base, base + n), base even, keys outside the task's range zero:
        // K2 [key - base][hd / 2] then V2 [(key - base) / 2][hd].
        const std::uint32_t* k2 = nullptr;
        const std::uint32_t* v2 = nullptr;
        int base = 0;
        const std::uint32_t* block_k2 = nullptr;  // K2 of the current key block
    };

    static void prepare_q(int hd, const float* qt, int slot, Operands* o) {
        std::uint32_t* q2 = o->qt2[slot];
        for (int p = 0; p < hd / 2; ++p) {
            const float* even = qt + 2 * p * kItems;
            const float* odd = even + kItems;
            for (int h = 0; h < kItems; h += 16) {
                _mm512_store_si512(q2 + p * kItems + h,
                                   pairs16(_mm512_load_ps(even + h), _mm512_load_ps(odd + h)));
            }
        }
    }

    // Converts the task's keys once: every query block of the task then reads K2/V2 densely.
    // Converting per key block instead re-read K and V for every batch of query blocks, rows
    // 12 KiB apart in the fused vision qkv (a page each), and cost a third of the time.
    static void begin_task(const AttentionArgs& a, int g, int key_lo, int key_hi, Operands* o) {
        const int hd = a.head_dim;
        o->base = key_lo & ~1;
        const int end = (key_hi + 1) & ~1;
        const std::size_t n = std::size_t(end - o->base);
        const std::size_t bytes = 2 * n * std::size_t(hd) * sizeof(std::uint16_t);
        auto* k2 =
            static_cast<std::uint32_t*>(detail::thread_scratch(detail::kScratchAttentionKV, bytes));
        std::uint32_t* v2 = k2 + n * std::size_t(hd / 2);
        o->k2 = k2;
        o->v2 = v2;
        if (a.kv_type == KvType::kBF16)
            return copy_task_kv(a, g, key_lo, key_hi, o->base, end, k2, v2);
        const float* kg = static_cast<const float*>(a.k) + g * a.k_head_stride;
        const float* vg = static_cast<const float*>(a.v) + g * a.v_head_stride;
        constexpr int kAhead = 24;  // rows prefetched ahead (strided rows defeat the prefetcher)
        auto row = [&](const float* head, std::ptrdiff_t stride, int key, int c) {
            if (key < key_lo || key >= key_hi) return _mm512_setzero_ps();
            const float* src = head + key * stride + c;
            if (key + kAhead < key_hi) {
                _mm_prefetch(reinterpret_cast<const char*>(src + kAhead * stride), _MM_HINT_T0);
            }
            return _mm512_loadu_ps(src);
        };
        for (int key = o->base; key < end; ++key) {
            std::uint32_t* dst = k2 + std::size_t(key - o->base) * (hd / 2);
            for (int c = 0; c < hd; c += 16) {
                _mm256_store_si256(reinterpret_cast<__m256i*>(dst + c / 2),
                                   __m256i(_mm512_cvtneps_pbh(row(kg, a.k_row_stride, key, c))));
            }
        }
        for (int key = o->base; key < end; key += 2) {
            std::uint32_t* dst = v2 + std::size_t(key - o->base) / 2 * hd;
            for (int c = 0; c < hd; c += 16) {
                _mm512_store_si512(dst + c, pairs16(row(vg, a.v_row_stride, key, c),
                                                    row(vg, a.v_row_stride, key + 1, c)));
            }
        }
    }

    static void load_kv(const AttentionArgs& a, int, int j0, int, int, Operands* o) {
        o->block_k2 = o->k2 + std::size_t(j0 - o->base) * (a.head_dim / 2);
    }

    static void scores(const Operands& o, int slot, const float*, int hd, int nb, float* st) {
        qk_rows(o.block_k2, hd / 2, o.qt2[slot], nb, st);
    }

    // The weights go straight into Pt2, two keys at a time, without a pass over f32 weights:
    // the same exp2 values, roundings and sums as exp_weights (x86/attention_flash.h). Pairs
    // start at an even key (V2's pairing); with j0 odd the first pair is (zero, P[0]).
    static void weights(Operands& o, float* st, int j0, int nb, __m512 sub0, __m512 sub1,
                        __m512* sum0, __m512* sum1) {
        const int first = (j0 - o.base) & 1;
        const int key_pairs = (first + nb + 1) / 2;
        const __m512 zero = _mm512_setzero_ps();
        __m512 s0 = zero, s1 = zero;
        auto weight = [&](int i, __m512 sub, int h) {
            return exp2_ps<kExpDegree>(_mm512_sub_ps(_mm512_load_ps(st + i * kItems + h), sub));
        };
        for (int p = 0; p < key_pairs; ++p) {
            const int i0 = 2 * p - first, i1 = i0 + 1;  // block-relative keys of the pair
            __m512 lo0 = zero, lo1 = zero, hi0 = zero, hi1 = zero;
            if (i0 >= 0) {
                lo0 = weight(i0, sub0, 0), lo1 = weight(i0, sub1, 16);
                s0 = _mm512_add_ps(s0, lo0), s1 = _mm512_add_ps(s1, lo1);
            }
            if (i1 < nb) {
                hi0 = weight(i1, sub0, 0), hi1 = weight(i1, sub1, 16);
                s0 = _mm512_add_ps(s0, hi0), s1 = _mm512_add_ps(s1, hi1);
            }
            _mm512_store_si512(o.pt2 + p * kItems, pairs16(lo0, hi0));
            _mm512_store_si512(o.pt2 + p * kItems + 16, pairs16(lo1, hi1));
        }
        *sum0 = s0;
        *sum1 = s1;
    }

    // Ot from Pt2, which weights() wrote (pt, the f32 scores, is not read).
    static void accumulate(Operands& o, const float* /*pt*/, int j0, int nb, int hd, __m512 al0,
                           __m512 al1, float* ot) {
        const int first = (j0 - o.base) & 1;
        const int key_pairs = (first + nb + 1) / 2;
        const std::uint32_t* v2 = o.v2 + std::size_t(j0 - first - o.base) / 2 * hd;
        const bool rescale = needs_rescale(al0, al1);
        for (int d0 = 0; d0 < hd; d0 += 8) {
            float* o_d = ot + d0 * kItems;
            if (rescale) {
                pv_tile<true>(v2 + d0, hd, o.pt2, key_pairs, al0, al1, o_d);
            } else {
                pv_tile<false>(v2 + d0, hd, o.pt2, key_pairs, al0, al1, o_d);
            }
        }
    }

    static bool try_small(const AttentionArgs& a, int g, int group, int row, int n, int lo,
                          const int* hi) {
        return decode_small<Bf16Decode>(a, g, group, row, n, lo, hi);
    }
};

}  // namespace

// Whether attention_run_task below handles a; otherwise the caller uses the f32 kernel.
bool attention_supported(const AttentionArgs& a) { return flash_supported(a); }

void attention_run_task(const AttentionArgs& a, int task, int num_tasks) {
    flash_run_task<Bf16Tiles>(a, task, num_tasks);
}

}  // namespace qvl::kernels::avx512bf16
