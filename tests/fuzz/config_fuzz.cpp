// Fuzzes model/config.h parse_model_config (config.json). A config it accepts must pass its own
// validation again and have the shapes the engine divides by.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    qvl::base::Result<qvl::model::ModelConfig> c =
        qvl::model::parse_model_config(text, "config.json");
    if (!c.ok()) {
        if (c.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    if (!qvl::model::validate_model_config(c.value(), "config.json").ok()) {
        qvl::fuzz::fail("parse_model_config accepted a config validate_model_config refuses");
    }
    const qvl::model::TextConfig& t = c->text;
    const qvl::model::VisionConfig& v = c->vision;
    if (t.hidden_size <= 0 || t.num_attention_heads <= 0 || t.num_key_value_heads <= 0 ||
        t.head_dim <= 0 || t.vocab_size <= 0 || t.num_hidden_layers <= 0 ||
        t.intermediate_size <= 0) {
        qvl::fuzz::fail("accepted a non-positive text size");
    }
    if (t.num_attention_heads % t.num_key_value_heads != 0) qvl::fuzz::fail("kv heads");
    if (t.mrope_section[0] + t.mrope_section[1] + t.mrope_section[2] != t.head_dim / 2) {
        qvl::fuzz::fail("mrope_section does not sum to head_dim / 2");
    }
    if (v.num_heads <= 0 || v.hidden_size % v.num_heads != 0 || v.depth <= 0 || v.patch_size <= 0 ||
        v.spatial_merge_size <= 0 || v.temporal_patch_size <= 0) {
        qvl::fuzz::fail("accepted a bad vision size");
    }
    for (int idx : v.deepstack_visual_indexes) {
        if (idx < 0 || idx >= v.depth) qvl::fuzz::fail("deepstack index outside the depth");
    }
    return 0;
}
