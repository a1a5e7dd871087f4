// What a run will cost, before running it (qvl-run --dry-run): FLOPs and bytes of each phase
// from the model's shapes (shared docs/qwen3vl-spec.md section 9), turned into time with rates
// measured on this machine by a short probe through the same executor and kernels the model
// uses, and the memory the run will touch.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/model.h"
#include "runtime/session.h"

namespace qvl::runtime {

// Rates of the two kernels that bound the phases, measured with the session's threads, kernel
// tier and precision: a matrix product of prefill shape (GFLOP/s) and a matrix-vector product
// streaming weights from memory (GB/s of weights), each over about 0.1-0.3 s.
struct MachineRates {
    double matmul_gflops = 0;
    double weights_gbps = 0;
};
MachineRates probe_rates(const SessionOptions& options);

struct RunShape {
    std::vector<int> image_patches;  // per image, all frames
    int prompt_tokens = 0;           // image pads expanded
    int n_predict = 0;
    kernels::KvType kv_type = kernels::KvType::kF32;  // of the KV cache decode reads
};

// Bytes of KV cache per token (keys and values of every layer) in elements of `type`.
double kv_bytes_per_token(const model::TextConfig& text, kernels::KvType type);

struct CostEstimate {
    double vision_gflop = 0, prefill_gflop = 0, decode_gbytes_per_token = 0;
    double vision_ms = 0, prefill_ms = 0, ttft_ms = 0, decode_ms_per_token = 0;
};

// FLOPs: matrix products and attention (F_vis(N) per image, 2 x linear parameters per prompt
// token, causal attention, one lm_head row); decode reads every text weight once per token plus
// the KV cache at the mean context. ttft = vision + prefill (decoding and preprocessing aside).
CostEstimate estimate_cost(const model::ModelConfig& config, const RunShape& shape,
                           const MachineRates& rates);

// Bytes of the activation arena the run's graphs need: the vision graph of its largest image and
// the text graph of its first prefill chunk, planned exactly as a session plans them.
std::size_t activation_bytes(const model::Model& model, const RunShape& shape);

}  // namespace qvl::runtime
