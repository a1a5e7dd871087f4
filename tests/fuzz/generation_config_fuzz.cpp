// Fuzzes model/config.h load_generation_config (generation_config.json). Accepted values must be
// inside the ranges the sampler assumes.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static qvl::fuzz::MemFile file("generation_config.json");
    file.write(data, size);
    qvl::base::Result<qvl::model::GenerationConfig> g =
        qvl::model::load_generation_config(file.path());
    if (!g.ok()) {
        if (g.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    if (!(g->temperature >= 0.0f) || g->top_k < 0 || !(g->top_p > 0.0f && g->top_p <= 1.0f) ||
        !(g->repetition_penalty > 0.0f)) {
        qvl::fuzz::fail("accepted a sampling value out of range");
    }
    for (std::int32_t id : g->eos_token_ids) {
        if (id < 0) qvl::fuzz::fail("accepted a negative eos id");
    }
    return 0;
}
