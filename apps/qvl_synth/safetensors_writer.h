// A minimal safetensors writer for random bf16 checkpoints (qvl-synth only; the engine's reader
// lives in engine/io). Layout: 8-byte little-endian header length, a JSON header padded with
// spaces to a multiple of 8, then the tensors back to back in the order given.
//
// Values are counter-based: element e of tensor t depends only on (seed, t, e), so the bytes do
// not depend on the thread count or the chunk size, and any slice can be generated on its own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "synth_model.h"

namespace qvl::synth {

struct SafetensorsLayout {
    std::string header;                  // JSON, already padded; its size is a multiple of 8
    std::vector<std::uint64_t> offsets;  // per tensor, begin inside the data section
    std::uint64_t data_bytes = 0;        // size of the data section
    std::uint64_t file_bytes() const { return 8 + header.size() + data_bytes; }
};

// Places the tensors back to back in the given order (all BF16) and builds the header, with a
// "__metadata__" {"format": "pt"} entry first as torch writes it.
SafetensorsLayout plan_layout(const std::vector<TensorSpec>& tensors);

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
    std::uint64_t chunk_bytes = 32ull << 20;  // unit of work per thread and per pwrite; even
};

// Writes the whole file at `path` (created or truncated). Fails with kIo naming the path, the
// offset and the OS error (a full disk included), or kResourceExhausted when the file system
// lacks the space (checked before writing).
base::Status write_random_safetensors(const std::filesystem::path& path,
                                      const std::vector<TensorSpec>& tensors,
                                      const WriteOptions& options);

}  // namespace qvl::synth
