// Int8-weight GEMM: weight quantization and layout, the tile driver shared by every ISA tier, and
// the scalar tier (kernels/gemm_q8.h has the contract; the SIMD panel kernels are in
// kernels/x86/gemm_q8_*.cpp).
#include "kernels/gemm_q8.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "base/bf16.h"
#include "base/check.h"
#include "kernels/gemm_q8_internal.h"
#include "kernels/weight_panels.h"

namespace qvl::kernels {
namespace {

static_assert(kQ8Panel == kPanelOutputs, "int8 panels are interleaved 16 rows at a time");

int ceil_div(int a, int b) { return (a + b - 1) / b; }
std::size_t round64(std::size_t x) { return (x + 63) / 64 * 64; }

// The shared quantization of one block: d = amax/127, q = nearbyint(x·(127/amax)).
void quantize_block(const float* x, int n, std::int8_t* q, float* d) {
    float amax = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        amax = a > amax ? a : amax;
    }
    if (!(amax > 0.0f) || !std::isfinite(amax)) {  // all zero, or not a number: zeros
        for (int i = 0; i < n; ++i) q[i] = 0;
        *d = 0.0f;
        return;
    }
    const float inv = 127.0f / amax;
    for (int i = 0; i < n; ++i) {
        // |x·inv| <= 127(1 + ulp): adding and removing 1.5·2^23 rounds to nearest even, exactly
        // as nearbyint in the default rounding mode (and as the SIMD quantizers' cvtps2dq).
        constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
        float r = (x[i] * inv + kRound) - kRound;
        r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r == r ? r : 0.0f;  // NaN -> 0
        q[i] = std::int8_t(r);
    }
    *d = amax / 127.0f;
}

// Q8RowSquares of one row: x its source values, q and d its quantization, n a multiple of 8
// (the padded length; padding is zero on both sides).
void row_squares(const float* x, const std::int8_t* q, const float* d, int block, std::size_t n,
                 const Q8RowSquares& out, int row) {
    constexpr int kLanes = 8;  // independent sums: short dependency chains, one fixed order
    double err[kLanes] = {}, src[kLanes] = {}, deq[kLanes] = {};
    for (std::size_t k0 = 0; k0 < n; k0 += kLanes) {
        const double scale = d[k0 / std::size_t(block)];  // block is a multiple of 8
        for (int t = 0; t < kLanes; ++t) {
            const double exact = x[k0 + std::size_t(t)];
            const double dq = double(q[k0 + std::size_t(t)]) * scale;
            err[t] += (dq - exact) * (dq - exact);
            src[t] += exact * exact;
            deq[t] += dq * dq;
        }
    }
    double e = 0.0, s = 0.0, w = 0.0;
    for (int t = 0; t < kLanes; ++t) e += err[t], s += src[t], w += deq[t];
    out.error[row] = e;
    out.source[row] = s;
    out.dequantized[row] = w;
}

}  // namespace

bool q8_block_ok(int block) {
    return block == 32 || block == 64 || (block % 128 == 0 && block >= 128 && block <= kQ8MaxBlock);
}

int q8_row_block(int cols) { return std::max(128, (cols + 127) / 128 * 128); }

std::size_t q8_data_bytes(int rows, int cols, int block) {
    QVL_CHECK(q8_block_ok(block) && rows >= 0 && cols >= 0, "q8: bad shape or block size");
    return round64(std::size_t(ceil_div(rows, kQ8Panel)) * kQ8Panel *
                   std::size_t(ceil_div(cols, block)) * block);
}

std::size_t q8_scale_bytes(int rows, int cols, int block) {
    QVL_CHECK(q8_block_ok(block) && rows >= 0 && cols >= 0, "q8: bad shape or block size");
    return round64(sizeof(float) * std::size_t(ceil_div(rows, kQ8Panel)) * kQ8Panel *
                   std::size_t(ceil_div(cols, block)));
}

Q8Matrix q8_describe(int rows, int cols, int block, std::int8_t* q, float* scales) {
    QVL_CHECK(q8_block_ok(block) && rows >= 0 && cols >= 0, "q8: bad shape or block size");
    return {.rows = rows,
            .cols = cols,
            .block = block,
            .k_blocks = ceil_div(cols, block),
            .panels = ceil_div(rows, kQ8Panel),
            .q = q,
            .scales = scales};
}

void q8_quantize_panels(const void* w, WeightType type, std::ptrdiff_t ldw, const Q8Matrix& m,
                        int panel0, int panel1, Isa isa, const Q8RowSquares* squares) {
    QVL_CHECK(type == WeightType::kBF16 || type == WeightType::kF32, "q8: source must be bf16/f32");
    auto* q = const_cast<std::int8_t*>(m.q);
    auto* scales = const_cast<float*>(m.scales);
    const std::size_t k_pad = std::size_t(m.k_blocks) * std::size_t(m.block);
    std::vector<float> row(k_pad, 0.0f);
    std::vector<std::int8_t> qrows(kQ8Panel * k_pad);  // the panel's 16 rows, quantized
    std::vector<float> d(std::size_t(m.k_blocks));
    std::vector<std::int32_t> sums(std::size_t(m.k_blocks));
    detail::Q8QuantizeRowFn quantize_row = q8_quantize_row;
    if (isa == Isa::kAvx512Bf16) quantize_row = detail::q8_quantize_row_avx512;
    if (isa == Isa::kAvx2 || isa == Isa::kAvx512) quantize_row = detail::q8_quantize_row_avx2;
    const std::size_t panel_bytes = std::size_t(m.block) * kQ8Panel;
    for (int p = panel0; p < panel1; ++p) {
        for (int col = 0; col < kQ8Panel; ++col) {
            const int r = p * kQ8Panel + col;
            // One source row widened at once (a loop the compiler vectorises), zero past cols.
            if (r < m.rows && type == WeightType::kBF16) {
                const auto* src = static_cast<const std::uint16_t*>(w) + std::ptrdiff_t(r) * ldw;
                for (int i = 0; i < m.cols; ++i) {
                    const std::uint32_t bits = std::uint32_t(src[i]) << 16;
                    std::memcpy(&row[std::size_t(i)], &bits, sizeof bits);
                }
            } else if (r < m.rows) {
                const float* src = static_cast<const float*>(w) + std::ptrdiff_t(r) * ldw;
                std::copy(src, src + m.cols, row.begin());
            } else {
                std::fill(row.begin(), row.end(), 0.0f);
            }
            // The activation quantizer has exactly the weights' formula (one row, per block).
            quantize_row(row.data(), int(k_pad), m.block, qrows.data() + std::size_t(col) * k_pad,
                         d.data(), sums.data());
            if (squares != nullptr && r < m.rows) {
                row_squares(row.data(), qrows.data() + std::size_t(col) * k_pad, d.data(), m.block,
                            k_pad, *squares, r);
            }
            for (int b = 0; b < m.k_blocks; ++b) {
                const std::size_t base = std::size_t(p) * std::size_t(m.k_blocks) + std::size_t(b);
                scales[base * kQ8Panel + std::size_t(col)] = d[std::size_t(b)];
            }
        }
        // Block b of the panel: 4 consecutive k of each of the 16 rows per 64 bytes, written in
        // order (one 4-byte store per row and group, 64 bytes apart, was a quarter of a q8 load).
        for (int b = 0; b < m.k_blocks; ++b) {
            const void* rows[kQ8Panel];
            for (int col = 0; col < kQ8Panel; ++col) {
                rows[col] = qrows.data() + std::size_t(col) * k_pad + std::size_t(b) * m.block;
            }
            interleave_words16(
                rows, m.block / 4,
                q + (std::size_t(p) * std::size_t(m.k_blocks) + std::size_t(b)) * panel_bytes);
        }
    }
}

std::int8_t q8_weight(const Q8Matrix& m, int row, int col) {
    if (m.bits == 4) return detail::q4_weight(m, row, col);
    const int p = row / kQ8Panel, c = row % kQ8Panel, b = col / m.block, i = col % m.block;
    const std::size_t base = std::size_t(p * m.k_blocks + b) * kQ8Panel * std::size_t(m.block);
    return m.q[base + std::size_t((i / 4 * kQ8Panel + c) * 4 + i % 4)];
}

float q8_scale(const Q8Matrix& m, int row, int block_index) {
    if (m.bits == 4) return detail::q4_scale(m, row, block_index);
    const int p = row / kQ8Panel, c = row % kQ8Panel;
    return m.scales[std::size_t(p * m.k_blocks + block_index) * kQ8Panel + std::size_t(c)];
}

void q8_quantize_row(const float* x, int k, int block, std::int8_t* q, float* d,
                     std::int32_t* sums) {
    const int kb = ceil_div(k, block);
    for (int b = 0; b < kb; ++b) {
        const int k0 = b * block;
        const int n = std::min(block, k - k0);
        // A partial block quantizes as if zero padded: zeros change neither amax nor the sums.
        quantize_block(x + k0, n, q + k0, d + b);
        std::fill(q + k0 + n, q + k0 + block, std::int8_t{0});
        std::int32_t s = 0;
        for (int i = 0; i < block; ++i) s += q[k0 + i];
        sums[b] = s;
    }
}

namespace detail {

void q8_bias_row(std::int8_t* q, std::ptrdiff_t n) {
    for (std::ptrdiff_t i = 0; i < n; ++i) q[i] = std::int8_t(std::uint8_t(q[i]) ^ 0x80u);
}

void q8_panel_scalar(const Q8PanelArgs& a) {
    const Q8Matrix& w = *a.w;
    const std::size_t panel_bytes = std::size_t(w.block) * kQ8Panel;
    for (int r = 0; r < a.rows; ++r) {
        const std::int8_t* qa = a.qa + r * a.lda_q;
        for (int col = 0; col < kQ8Panel; ++col) {
            float acc = 0.0f;
            for (int b = 0; b < w.k_blocks; ++b) {
                const std::size_t base =
                    std::size_t(a.panel) * std::size_t(w.k_blocks) + std::size_t(b);
                const std::int8_t* wq = w.q + base * panel_bytes;
                std::int32_t isum = 0;
                for (int i = 0; i < w.block; ++i)
                    isum += std::int32_t(qa[b * w.block + i]) *
                            std::int32_t(wq[(i / 4 * kQ8Panel + col) * 4 + i % 4]);
                const float t = float(isum) * w.scales[base * kQ8Panel + std::size_t(col)];
                acc = std::fma(t, a.da[std::ptrdiff_t(r) * w.k_blocks + b], acc);
            }
            a.acc[r * kQ8Panel + col] = acc;
        }
    }
}

namespace {

// A tier's int8 pieces.
struct Q8Tier {
    Q8PanelFn panel = q8_panel_scalar;
    Q8QuantizeRowFn quantize = q8_quantize_row;
    // The tier's epilogue, the one its f32 GEMM uses (vectorised activations), for every m.
    decltype(&gemm_epilogue) epilogue = gemm_epilogue;
    bool vnni = false;  // takes biased activations from kQ8VnniBiasedMinRows rows
    bool fma = false;   // has the FMA kernel (gemm_q8_internal.h), for q8_fma_for_gemm() CPUs
};

// The tier's pieces for a matrix of `bits` (4-bit panels take signed activations and have no
// FMA kernel: their weights need unpacking either way).
Q8Tier q8_tier(Isa isa, int bits = 8) {
    if (bits == 4) {
        switch (isa) {
            case Isa::kAvx512Bf16:
                return {q4_panel_avx512vnni, q8_quantize_row_avx512, gemm_epilogue_avx512};
            case Isa::kAvx512:
                return {q4_panel_avx2, q8_quantize_row_avx2, gemm_epilogue_avx512};
            case Isa::kAvx2:
                return {q4_panel_avx2, q8_quantize_row_avx2, gemm_epilogue_avx2};
            default:
                return {q4_panel_scalar};
        }
    }
    switch (isa) {
        case Isa::kAvx512Bf16:
            return {q8_panel_avx512vnni, q8_quantize_row_avx512, gemm_epilogue_avx512, true, false};
        case Isa::kAvx512:  // no VNNI guaranteed: the AVX2 kernels
            return {q8_panel_avx2, q8_quantize_row_avx2, gemm_epilogue_avx512, false, true};
        case Isa::kAvx2:
            return {q8_panel_avx2, q8_quantize_row_avx2, gemm_epilogue_avx2, false, true};
        default:
            return {};
    }
}

// Quantized activation rows: row r's q at qa + r·lda_q, its d and sums at r·kb.
struct Q8Rows {
    std::int8_t* qa = nullptr;
    float* da = nullptr;
    std::int32_t* sa = nullptr;
    std::ptrdiff_t lda_q = 0;
    int kb = 0;

    Q8Rows from_row(int r) const {
        return {qa + r * lda_q, da + std::ptrdiff_t(r) * kb, sa + std::ptrdiff_t(r) * kb, lda_q,
                kb};
    }
};

const Q8Matrix& q8_weights(const GemmArgs& p) { return *static_cast<const Q8Matrix*>(p.w); }

// The shared layout over all m rows (gemm_q8_shared_a_bytes).
Q8Rows shared_rows(const GemmArgs& p) {
    const Q8Matrix& w = q8_weights(p);
    const std::ptrdiff_t lda_q = std::ptrdiff_t(w.k_blocks) * w.block;
    auto* base = static_cast<std::byte*>(p.packed_a);
    auto* da = reinterpret_cast<float*>(base + round64(std::size_t(p.m) * std::size_t(lda_q)));
    auto* sa = reinterpret_cast<std::int32_t*>(da + std::size_t(p.m) * std::size_t(w.k_blocks));
    return {reinterpret_cast<std::int8_t*>(base), da, sa, lda_q, w.k_blocks};
}

// Rows [m0, m1) of A quantized into out (its row 0 is row m0).
void quantize_rows(const GemmArgs& p, const Q8Tier& tier, bool biased, int m0, int m1,
                   const Q8Rows& out) {
    const int block = q8_weights(p).block;
    for (int r = 0; r < m1 - m0; ++r) {
        const Q8Rows row = out.from_row(r);
        tier.quantize(p.a + std::ptrdiff_t(m0 + r) * p.lda, p.k, block, row.qa, row.da, row.sa);
        if (biased) q8_bias_row(row.qa, out.lda_q);
    }
}

// The epilogue of rows [m0, m1) over the columns of one panel inside [n0, n1); acc and acc2 hold
// the panel's rows x 16 sums.
void panel_epilogue(const GemmArgs& p, const Q8Tier& tier, int panel, const float* acc,
                    const float* acc2, int m0, int m1, int n0, int n1) {
    const int j0 = std::max(n0, panel * kQ8Panel);
    const int j1 = std::min(n1, (panel + 1) * kQ8Panel);
    // acc is indexed from column panel·16; the epilogue wants it from j0.
    const int off = j0 - panel * kQ8Panel;
    tier.epilogue(p, acc + off, acc2 == nullptr ? nullptr : acc2 + off, kQ8Panel, m0, m1, j0, j1);
}

// A tile on the FMA kernel (gemm_q8_internal.h): chunks of k outer, panels inner, every panel's
// running sums in memory until the last chunk, then the epilogue panel by panel.
void fma_tile(const GemmArgs& p, const Q8Tier& tier, const Q8Rows& a, int m0, int m1, int n0,
              int n1) {
    const Q8Matrix& w = q8_weights(p);
    const auto* w2 = static_cast<const Q8Matrix*>(p.w_up);
    const int rows = m1 - m0;
    const int panel0 = n0 / kQ8Panel;
    const int panels = ceil_div(n1, kQ8Panel) - panel0;
    const std::size_t panel_acc = std::size_t(rows) * kQ8Panel;
    const std::size_t acc_bytes = sizeof(float) * panel_acc * std::size_t(panels);
    auto* acc = static_cast<float*>(thread_scratch(kScratchC, acc_bytes));
    std::fill_n(acc, panel_acc * std::size_t(panels), 0.0f);
    float* acc2 = nullptr;
    if (w2 != nullptr) {
        acc2 = static_cast<float*>(thread_scratch(kScratchC2, acc_bytes));
        std::fill_n(acc2, panel_acc * std::size_t(panels), 0.0f);
    }
    const int k_pad = w.k_blocks * w.block;
    const int chunk = std::max(kQ8FmaChunk / w.block, 1) * w.block;
    auto* x = static_cast<float*>(
        thread_scratch(kScratchQ8WideA, sizeof(float) * std::size_t(rows) * std::size_t(chunk)));
    auto* wide = static_cast<float*>(
        thread_scratch(kScratchQ8WideW, sizeof(float) * std::size_t(chunk) * kQ8Panel));
    const struct {
        const Q8Matrix* w;
        float* acc;
    } products[2] = {{&w, acc}, {w2, acc2}};
    for (int k0 = 0; k0 < k_pad; k0 += chunk) {
        const int kc = std::min(chunk, k_pad - k0);
        q8_widen_rows_avx2(a.qa, a.lda_q, rows, k0, kc, x);
        Q8FmaArgs f{.w = wide,
                    .blocks = kc / w.block,
                    .block = w.block,
                    .rows = rows,
                    .x = x,
                    .ldx = kc,
                    .da = a.da + k0 / w.block,
                    .ld_da = a.kb};
        for (int i = 0; i < panels; ++i) {
            for (const auto& product : products) {
                if (product.w == nullptr) continue;
                q8_widen_panel_avx2(*product.w, panel0 + i, k0, kc, wide);
                const std::size_t first_block =
                    std::size_t(panel0 + i) * std::size_t(w.k_blocks) + std::size_t(k0 / w.block);
                f.ws = product.w->scales + first_block * kQ8Panel;
                f.acc = product.acc + std::size_t(i) * panel_acc;
                q8_panel_fma_avx2(f);
            }
        }
    }
    for (int i = 0; i < panels; ++i) {
        const std::size_t at = std::size_t(i) * panel_acc;
        panel_epilogue(p, tier, panel0 + i, acc + at, acc2 == nullptr ? nullptr : acc2 + at, m0, m1,
                       n0, n1);
    }
}

}  // namespace

std::size_t gemm_q8_shared_a_bytes(const GemmArgs& p) {
    const Q8Matrix& w = q8_weights(p);
    const std::size_t rows = std::size_t(std::max(p.m, 0));
    return round64(rows * std::size_t(w.k_blocks) * std::size_t(w.block)) +
           rows * std::size_t(w.k_blocks) * (sizeof(float) + sizeof(std::int32_t));
}

void gemm_q8_quantize_a(const GemmArgs& p, int m0, int m1, Isa isa) {
    const Q8Tier tier = q8_tier(isa, q8_weights(p).bits);
    // Shared rows serve tasks of any size: biased whenever the kernel can take them so.
    quantize_rows(p, tier, tier.vnni, m0, m1, shared_rows(p).from_row(m0));
}

void gemm_q8_tile(const GemmArgs& p, int m0, int m1, int n0, int n1, Isa isa) {
    const auto* w = static_cast<const Q8Matrix*>(p.w);
    const auto* w2 = static_cast<const Q8Matrix*>(p.w_up);
    QVL_CHECK(w != nullptr && w->cols == p.k && w->rows >= n1, "gemm q8: weights do not match");
    QVL_CHECK(w2 == nullptr || (w2->cols == p.k && w2->rows >= n1 && w2->block == w->block &&
                                w2->bits == w->bits),
              "gemm q8: up weights do not match gate");
    QVL_CHECK(p.load_a == nullptr, "gemm q8: virtual A is not supported");
    const Q8Tier tier = q8_tier(isa, w->bits);
    const int rows = m1 - m0;
    const int kb = w->k_blocks;
    Q8Rows a;
    bool biased = false;
    if (p.packed_a != nullptr) {
        a = shared_rows(p).from_row(m0);
        biased = tier.vnni;
    } else {
        const std::ptrdiff_t lda_q = std::ptrdiff_t(kb) * w->block;
        a = {static_cast<std::int8_t*>(
                 thread_scratch(kScratchA, std::size_t(rows) * std::size_t(lda_q))),
             static_cast<float*>(
                 thread_scratch(kScratchB, sizeof(float) * std::size_t(rows) * std::size_t(kb))),
             static_cast<std::int32_t*>(thread_scratch(
                 kScratchB2, sizeof(std::int32_t) * std::size_t(rows) * std::size_t(kb))),
             lda_q, kb};
        biased = tier.vnni && rows >= kQ8VnniBiasedMinRows;
        quantize_rows(p, tier, biased, m0, m1, a);
    }
    // The FMA kernel's sums are exact for blocks up to 128 values only (gemm_q8_internal.h).
    if (tier.fma && rows >= kQ8FmaMinRows && w->block <= 128 && q8_fma_for_gemm())
        return fma_tile(p, tier, a, m0, m1, n0, n1);
    auto* acc = static_cast<float*>(
        thread_scratch(kScratchC, sizeof(float) * std::size_t(rows) * kQ8Panel));
    float* acc2 = w2 == nullptr ? nullptr
                                : static_cast<float*>(thread_scratch(
                                      kScratchC2, sizeof(float) * std::size_t(rows) * kQ8Panel));
    Q8PanelArgs args{.w = w,
                     .rows = rows,
                     .qa = a.qa,
                     .lda_q = a.lda_q,
                     .biased = biased,
                     .da = a.da,
                     .sa = a.sa};
    for (int panel = n0 / kQ8Panel; panel * kQ8Panel < n1; ++panel) {
        args.w = w;
        args.panel = panel;
        args.acc = acc;
        tier.panel(args);
        if (w2 != nullptr) {
            args.w = w2;
            args.acc = acc2;
            tier.panel(args);
        }
        panel_epilogue(p, tier, panel, acc, acc2, m0, m1, n0, n1);
    }
}

}  // namespace detail
}  // namespace qvl::kernels
