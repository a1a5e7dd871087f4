// qvl-synth's job as a function: a complete Hugging Face checkpoint folder with the Qwen3-VL-2B
// configuration files, tokenizer files copied from another folder, and random bf16 weights.
#pragma once

#include <cstdint>
#include <filesystem>

#include "base/status.h"
#include "synth_model.h"

namespace qvl::synth {

struct SynthOptions {
    std::filesystem::path out_dir;        // created if missing; existing files are replaced
    std::filesystem::path tokenizer_dir;  // holds tokenizer.json, tokenizer_config.json
    std::uint64_t seed = 0;
    SynthDims dims;     // real_dims() unless a test asks for tiny_dims()
    int n_threads = 0;  // 0: one per logical CPU, at most 8
};

// Writes config.json, generation_config.json, preprocessor_config.json, copies tokenizer.json,
// tokenizer_config.json and (if present) chat_template.json, then writes model.safetensors via
// a temporary name and renames it, so an interrupted run never leaves a plausible-looking
// checkpoint. Errors name the file: kNotFound for a missing tokenizer file, kIo for a refused
// write, kResourceExhausted for a full disk.
base::Status write_synthetic_checkpoint(const SynthOptions& options);

}  // namespace qvl::synth
