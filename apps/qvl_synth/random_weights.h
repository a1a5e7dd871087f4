// qvl-synth's random bf16 weights, written as a safetensors file through the engine's
// io::SafetensorsWriter (tensors back to back in the order given, the header as torch writes
// it).
//
// Values are counter-based: element e of tensor t depends only on (seed, t, e), so the bytes do
// not depend on the thread count or the chunk size, and any slice can be generated on its own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "base/status.h"
#include "io/safetensors_writer.h"
#include "synth_model.h"

namespace qvl::synth {

// The writer's specs of these tensors (all BF16).
std::vector<io::TensorSpec> bf16_specs(const std::vector<TensorSpec>& tensors);

// Fills out[0, n) with the bf16 bit patterns of elements [first, first + n) of a tensor whose
// values are uniform in spec's [center - half_width, center + half_width] (then rounded to bf16).
// tensor_key identifies the tensor's random stream (see tensor_key()).
void fill_random_bf16(const TensorSpec& spec, std::uint64_t tensor_key, std::uint64_t first,
                      std::uint64_t n, std::uint16_t* out);

// The random stream of tensor number `index` under `seed`.
std::uint64_t tensor_key(std::uint64_t seed, std::uint64_t index);

struct WriteOptions {
    std::uint64_t seed = 0;
    int n_threads = 0;                        // 0: one per logical CPU, at most 8
    std::uint64_t chunk_bytes = 32ull << 20;  // unit of work per thread and per append; even
};

// Writes the whole file at `path` (created or truncated). Fails with kResourceExhausted when the
// file system lacks the space (checked before writing), kIo naming the path and the OS error
// when a write is refused.
base::Status write_random_safetensors(const std::filesystem::path& path,
                                      const std::vector<TensorSpec>& tensors,
                                      const WriteOptions& options);

}  // namespace qvl::synth
