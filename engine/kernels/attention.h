// Scaled dot-product attention, flash style: tiled over keys with a running max and sum
// (online softmax), f32 accumulation, never an n_q x n_kv matrix in memory.
//
// For query row i < n_q and head h < n_heads, with kv head g = h / (n_heads / n_kv_heads):
//   out[i, h, :] = sum_j p_j v[j, g, :],  p = softmax_j(scale * q[i, h, :] . k[j, g, :])
// over the keys j < n_kv that row i may see:
//   - all of them, or, when causal, j <= q_pos0 + i (q_pos0 = absolute position of query row 0;
//     keys are positions). (The vision tower attends over one image per call: no segments.)
// A row that sees no key gets zeros. Element (row, head) of q lives at
// q + row * q_row_stride + head * q_head_stride (head_dim contiguous floats); k, v, out alike.
// Examples: vision qkv GEMM output [N, 3072]: q row stride 3072, head stride 64, k = q + 1024,
// v = q + 2048; text KV arena [kv_head][pos][head_dim]: row stride head_dim, head stride
// max_ctx * head_dim. out must not overlap q, k or v. n_heads % n_kv_heads == 0; n_kv_heads == 0
// means n_heads. No alignment required.
//
// K and V are f32 or bf16 (kv_type; q and out are always f32; strides count elements). bf16 K/V
// (the text KV arena outside f32 precision) are widened exactly at the points where the kernels
// load them, so every tier's result equals its result on f32 K/V holding the same values; the
// bf16-product kernel (round_bf16) reads them as they are, since it rounds K and V to bf16
// anyway.
//
// Performance: K/V rows with row stride == head_dim (the KV arena, or a head-major qkv layout)
// are read in place; other strides (the fused [N, 3072] qkv rows) are copied to dense rows once
// per task. Scratch is per thread (kernels/scratch.h), so there is no
// allocation per call. The AVX-512 kernel handles head_dim % 16 == 0 up to 128, the AVX2 kernel
// head_dim % 8 == 0 up to 256 (K/V repacked once per task); other head dims use a simpler
// row-at-a-time kernel.
//
// Row invariance: the result of (query row at absolute position p, head h) is bit-identical
// whether the row is computed in one prefill call, in a chunk of any size (q_pos0 = chunk
// start), as a decode step (n_q = 1) or in any task split, on every tier and for both
// round_bf16 settings: key blocks sit at fixed absolute key positions and the decode paths
// compute each row exactly as the block paths do. Prefix reuse and batched decode rely on it.
//
// Work splits into independent tasks (query blocks x kv-head groups); the split depends only
// on the arguments and num_tasks, never on the thread that runs a task, so results are
// identical for any thread count. Kernels do not thread: callers run the tasks, e.g.
//   const int n = attention_num_tasks(a, pool.size());
//   pool.parallel_for(n, [&](int t) { table.attention_task(a, t, n); });
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::kernels {

// Element type of K and V: 4-byte floats or bf16 (the upper half of a float, base/bf16.h).
enum class KvType : std::uint8_t { kF32, kBF16 };

inline constexpr std::size_t kv_type_bytes(KvType t) { return t == KvType::kBF16 ? 2 : 4; }

struct AttentionArgs {
    int n_q = 0;
    int n_kv = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    const float* q = nullptr;
    std::ptrdiff_t q_row_stride = 0, q_head_stride = 0;
    const void* k = nullptr;  // float or bf16 elements, see kv_type
    std::ptrdiff_t k_row_stride = 0, k_head_stride = 0;
    const void* v = nullptr;
    std::ptrdiff_t v_row_stride = 0, v_head_stride = 0;
    float* out = nullptr;
    std::ptrdiff_t out_row_stride = 0, out_head_stride = 0;
    float scale = 0.f;
    bool causal = false;
    int q_pos0 = 0;
    // Products on bf16-rounded operands (Q·scale, K, the softmax weights, V; f32 accumulation),
    // on vdpbf16ps, where the tier has a bf16 attention kernel (KernelTable::attention_bf16_task:
    // kAvx512Bf16) and the shape suits it (head_dim % 16 == 0, <= 128), whatever n_q (decode
    // too: a row's result must not depend on how many rows come with it). Elsewhere f32.
    bool round_bf16 = false;
    KvType kv_type = KvType::kF32;
    // The caller will also compute rows of this attention one at a time (decode over a KV
    // cache). A tier may then choose, for every n_q alike, the arithmetic whose one-row form is
    // fast: the AVX2 kernel takes its scores with head_dim in lanes (its tiles otherwise put
    // keys in lanes, which a single row can only feed through transposes). The results stay
    // within the same error bounds; row invariance holds for either setting.
    bool incremental = false;
};

// A good task count for n_threads workers (>= 1 whenever there is work).
int attention_num_tasks(const AttentionArgs& args, int n_threads);
// The tasks run through KernelTable::attention_task (kernels/kernel_table.h), any order, any
// thread.

namespace ref {
void attention_run_task(const AttentionArgs& args, int task, int num_tasks);
}  // namespace ref

}  // namespace qvl::kernels
