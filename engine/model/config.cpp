#include "model/config.h"

#include <cmath>
#include <limits>
#include <system_error>

#include "io/json.h"

namespace qvl::model {

using base::ErrorCode;
using io::JsonValue;

namespace {

constexpr std::int64_t kMaxDim = 1000000;

// Reads typed keys of one JSON object; every message names the file and the dotted key.
class ObjectReader {
  public:
    ObjectReader(std::string_view what, std::string prefix, const JsonValue& object)
        : what_(what), prefix_(std::move(prefix)), object_(object) {}

    std::string key_name(std::string_view key) const { return prefix_ + std::string(key); }

    // nullptr when absent or null.
    const JsonValue* optional(std::string_view key) const {
        const JsonValue* v = object_.find(key);
        return (v == nullptr || v->is_null()) ? nullptr : v;
    }

    base::Result<const JsonValue*> required(std::string_view key) const {
        const JsonValue* v = optional(key);
        if (v == nullptr) {
            return base::error(ErrorCode::kNotFound, "{}: missing key '{}'", what_, key_name(key));
        }
        return v;
    }

    base::Status wrong_type(std::string_view key, const JsonValue& v, const char* expected) const {
        return base::error(ErrorCode::kCorruptFile, "{}: '{}' is {}, expected {}", what_,
                           key_name(key), JsonValue::type_name(v.type()), expected);
    }

    base::Status integer(std::string_view key, std::int64_t* out, bool is_required) const {
        const JsonValue* v = optional(key);
        if (v == nullptr) {
            if (!is_required) return base::Status();
            return required(key).status();
        }
        if (!v->is_integer()) return wrong_type(key, *v, "an integer");
        *out = v->as_int();
        return base::Status();
    }

    // A size in [1, limit].
    base::Status dim(std::string_view key, int* out, bool is_required = true,
                     std::int64_t limit = kMaxDim) const {
        std::int64_t v = *out;
        QVL_TRY(integer(key, &v, is_required));
        if (v < 1 || v > limit) {
            return base::error(ErrorCode::kInvalidArgument, "{}: '{}' is {}, expected 1..{}", what_,
                               key_name(key), v, limit);
        }
        *out = int(v);
        return base::Status();
    }

    base::Status token_id(std::string_view key, std::int32_t* out) const {
        std::int64_t v = 0;
        QVL_TRY(integer(key, &v, true));
        if (v < 0 || v > std::numeric_limits<std::int32_t>::max()) {
            return base::error(ErrorCode::kInvalidArgument, "{}: '{}' is {}, not a token id", what_,
                               key_name(key), v);
        }
        *out = std::int32_t(v);
        return base::Status();
    }

    base::Status number(std::string_view key, double* out, bool is_required) const {
        const JsonValue* v = optional(key);
        if (v == nullptr) {
            if (!is_required) return base::Status();
            return required(key).status();
        }
        if (!v->is_number()) return wrong_type(key, *v, "a number");
        *out = v->as_double();
        return base::Status();
    }

    base::Status boolean(std::string_view key, bool* out) const {
        const JsonValue* v = optional(key);
        if (v == nullptr) return base::Status();
        if (!v->is_bool()) return wrong_type(key, *v, "true or false");
        *out = v->as_bool();
        return base::Status();
    }

    base::Status string(std::string_view key, std::string* out) const {
        QVL_ASSIGN_OR_RETURN(const JsonValue* v, required(key));
        if (!v->is_string()) return wrong_type(key, *v, "a string");
        *out = v->as_string();
        return base::Status();
    }

    base::Result<const JsonValue*> object(std::string_view key) const {
        QVL_ASSIGN_OR_RETURN(const JsonValue* v, required(key));
        if (!v->is_object()) return wrong_type(key, *v, "an object");
        return v;
    }

    // A list of integers (any count); values are range-checked by the caller.
    base::Status int_list(std::string_view key, std::vector<int>* out) const {
        QVL_ASSIGN_OR_RETURN(const JsonValue* v, required(key));
        if (!v->is_array()) return wrong_type(key, *v, "a list of integers");
        out->clear();
        for (const JsonValue& item : v->items()) {
            if (!item.is_integer() || item.as_int() < std::numeric_limits<int>::min() ||
                item.as_int() > std::numeric_limits<int>::max()) {
                return wrong_type(key, item, "a list of integers");
            }
            out->push_back(int(item.as_int()));
        }
        return base::Status();
    }

    std::string_view what() const { return what_; }

  private:
    std::string_view what_;
    std::string prefix_;
    const JsonValue& object_;
};

base::Status parse_rope(const ObjectReader& text, TextConfig* out) {
    // v5 nests everything (theta included) in rope_parameters; 4.57 has rope_scaling + rope_theta.
    const JsonValue* params = text.optional("rope_parameters");
    const char* params_key = "rope_parameters";
    if (params == nullptr) {
        params = text.optional("rope_scaling");
        params_key = "rope_scaling";
    }
    out->mrope_section[0] = 24;
    out->mrope_section[1] = 20;
    out->mrope_section[2] = 20;
    out->mrope_interleaved = true;
    double theta = 0.0;
    bool have_theta = false;
    if (params != nullptr) {
        if (!params->is_object()) return text.wrong_type(params_key, *params, "an object");
        const ObjectReader rope(text.what(), text.key_name(params_key) + ".", *params);
        if (const JsonValue* type = rope.optional("rope_type"); type != nullptr) {
            if (!type->is_string()) return rope.wrong_type("rope_type", *type, "a string");
            if (type->as_string() != "default") {
                return base::error(ErrorCode::kUnsupported,
                                   "{}: '{}' is '{}', only 'default' is supported", text.what(),
                                   rope.key_name("rope_type"), type->as_string());
            }
        }
        if (rope.optional("mrope_section") != nullptr) {
            std::vector<int> section;
            QVL_TRY(rope.int_list("mrope_section", &section));
            if (section.size() != 3) {
                return base::error(ErrorCode::kInvalidArgument,
                                   "{}: '{}' has {} entries, expected 3", text.what(),
                                   rope.key_name("mrope_section"), section.size());
            }
            for (int i = 0; i < 3; ++i) out->mrope_section[i] = section[std::size_t(i)];
        }
        QVL_TRY(rope.boolean("mrope_interleaved", &out->mrope_interleaved));
        // Qwen3-VL interleaves the (t, h, w) frequencies; the chunked Qwen2-VL layout would
        // need other rope tables, and running it with these would be silently wrong.
        if (!out->mrope_interleaved) {
            return base::error(ErrorCode::kUnsupported,
                               "{}: '{}' is false, only the interleaved MRoPE layout (true) is "
                               "supported",
                               text.what(), rope.key_name("mrope_interleaved"));
        }
        if (rope.optional("rope_theta") != nullptr) {
            QVL_TRY(rope.number("rope_theta", &theta, true));
            have_theta = true;
        }
    }
    if (!have_theta) QVL_TRY(text.number("rope_theta", &theta, true));
    if (!(theta > 1.0) || !std::isfinite(theta)) {
        return base::error(ErrorCode::kInvalidArgument, "{}: rope_theta is {}, expected > 1",
                           text.what(), theta);
    }
    out->rope_theta = theta;
    return base::Status();
}

base::Status parse_text(const ObjectReader& r, TextConfig* out) {
    QVL_TRY(r.dim("vocab_size", &out->vocab_size));
    QVL_TRY(r.dim("hidden_size", &out->hidden_size));
    QVL_TRY(r.dim("intermediate_size", &out->intermediate_size));
    QVL_TRY(r.dim("num_hidden_layers", &out->num_hidden_layers));
    QVL_TRY(r.dim("num_attention_heads", &out->num_attention_heads));
    QVL_TRY(r.dim("num_key_value_heads", &out->num_key_value_heads));
    QVL_TRY(r.dim("head_dim", &out->head_dim));
    double eps = 0.0;
    QVL_TRY(r.number("rms_norm_eps", &eps, true));
    if (!(eps > 0.0 && eps < 1.0)) {
        return base::error(ErrorCode::kInvalidArgument, "{}: '{}' is {}, expected 0 < eps < 1",
                           r.what(), r.key_name("rms_norm_eps"), eps);
    }
    out->rms_norm_eps = float(eps);
    QVL_TRY(parse_rope(r, out));
    QVL_TRY(r.string("hidden_act", &out->hidden_act));
    QVL_TRY(r.boolean("attention_bias", &out->attention_bias));
    QVL_TRY(r.boolean("tie_word_embeddings", &out->tie_word_embeddings));
    out->max_position_embeddings = 262144;
    QVL_TRY(r.integer("max_position_embeddings", &out->max_position_embeddings, false));
    if (out->max_position_embeddings < 1 ||
        out->max_position_embeddings > (std::int64_t(1) << 30)) {
        return base::error(ErrorCode::kInvalidArgument, "{}: '{}' is {}, expected 1..{}", r.what(),
                           r.key_name("max_position_embeddings"), out->max_position_embeddings,
                           std::int64_t(1) << 30);
    }
    return base::Status();
}

base::Status parse_vision(const ObjectReader& r, VisionConfig* out) {
    QVL_TRY(r.dim("depth", &out->depth));
    QVL_TRY(r.dim("hidden_size", &out->hidden_size));
    QVL_TRY(r.dim("num_heads", &out->num_heads));
    QVL_TRY(r.dim("intermediate_size", &out->intermediate_size));
    QVL_TRY(r.dim("patch_size", &out->patch_size, true, 1024));
    QVL_TRY(r.dim("temporal_patch_size", &out->temporal_patch_size, true, 64));
    QVL_TRY(r.dim("spatial_merge_size", &out->spatial_merge_size, true, 64));
    out->in_channels = 3;
    QVL_TRY(r.dim("in_channels", &out->in_channels, false, 64));
    QVL_TRY(r.dim("out_hidden_size", &out->out_hidden_size));
    QVL_TRY(r.dim("num_position_embeddings", &out->num_position_embeddings));
    QVL_TRY(r.int_list("deepstack_visual_indexes", &out->deepstack_visual_indexes));
    QVL_TRY(r.string("hidden_act", &out->hidden_act));
    return base::Status();
}

// The refusals' two kinds, naming the file they come from.
struct ConfigErrors {
    std::string_view what;
    base::Status invalid(const std::string& message) const {
        return base::Status(ErrorCode::kInvalidArgument, fmt::format("{}: {}", what, message));
    }
    base::Status unsupported(const std::string& message) const {
        return base::Status(ErrorCode::kUnsupported, fmt::format("{}: {}", what, message));
    }
};

base::Status validate_text_config(const TextConfig& t, const ConfigErrors& e) {
    if (t.hidden_act != "silu") {
        return e.unsupported(fmt::format(
            "'text_config.hidden_act' is '{}', only 'silu' is supported", t.hidden_act));
    }
    if (t.attention_bias) {
        return e.unsupported("'text_config.attention_bias' is true, qvl supports only false");
    }
    if (t.num_attention_heads % t.num_key_value_heads != 0) {
        return e.invalid(
            fmt::format("text_config.num_key_value_heads {} does not divide num_attention_heads {}",
                        t.num_key_value_heads, t.num_attention_heads));
    }
    if (t.head_dim % 2 != 0) {
        return e.invalid(
            fmt::format("text_config.head_dim {} is odd, rotary needs it even", t.head_dim));
    }
    if (std::int64_t(t.num_attention_heads) * t.head_dim > kMaxDim) {
        return e.invalid(fmt::format("text_config num_attention_heads {} x head_dim {} is over {}",
                                     t.num_attention_heads, t.head_dim, kMaxDim));
    }
    const int section_sum = t.mrope_section[0] + t.mrope_section[1] + t.mrope_section[2];
    if (t.mrope_section[0] < 0 || t.mrope_section[1] < 0 || t.mrope_section[2] < 0 ||
        section_sum != t.head_dim / 2) {
        return e.invalid(
            fmt::format("text_config mrope_section [{}, {}, {}] sums to {}, expected "
                        "head_dim / 2 = {}",
                        t.mrope_section[0], t.mrope_section[1], t.mrope_section[2], section_sum,
                        t.head_dim / 2));
    }
    return base::Status();
}

base::Status validate_vision_config(const VisionConfig& v, const ConfigErrors& e) {
    if (v.hidden_act != "gelu_pytorch_tanh") {
        return e.unsupported(
            fmt::format("'vision_config.hidden_act' is '{}', only 'gelu_pytorch_tanh' is supported",
                        v.hidden_act));
    }
    if (v.in_channels != 3) {
        return e.unsupported(
            fmt::format("vision_config.in_channels is {}, qvl reads RGB (3)", v.in_channels));
    }
    if (v.hidden_size % v.num_heads != 0) {
        return e.invalid(fmt::format("vision_config.num_heads {} does not divide hidden_size {}",
                                     v.num_heads, v.hidden_size));
    }
    if (v.head_dim() % 2 != 0) {
        return e.invalid(fmt::format("vision_config head_dim {} (hidden_size / num_heads) is odd",
                                     v.head_dim()));
    }
    const int side = int(std::lround(std::sqrt(double(v.num_position_embeddings))));
    if (side * side != v.num_position_embeddings) {
        return e.invalid(
            fmt::format("vision_config.num_position_embeddings {} is not a square grid",
                        v.num_position_embeddings));
    }
    const std::int64_t merged =
        std::int64_t(v.hidden_size) * v.spatial_merge_size * v.spatial_merge_size;
    const std::int64_t patch =
        std::int64_t(v.in_channels) * v.temporal_patch_size * v.patch_size * v.patch_size;
    if (merged > kMaxDim || patch > kMaxDim) {
        return e.invalid(fmt::format("vision_config merged width {} or patch size {} is over {}",
                                     merged, patch, kMaxDim));
    }
    return base::Status();
}

// What the vision tower and the text model must agree on, and the special token ids.
base::Status validate_model_links(const ModelConfig& c, const ConfigErrors& e) {
    const TextConfig& t = c.text;
    const VisionConfig& v = c.vision;
    if (v.out_hidden_size != t.hidden_size) {
        return e.invalid(
            fmt::format("vision_config.out_hidden_size {} differs from text_config.hidden_size {}",
                        v.out_hidden_size, t.hidden_size));
    }
    for (std::size_t i = 0; i < v.deepstack_visual_indexes.size(); ++i) {
        const int index = v.deepstack_visual_indexes[i];
        if (index < 0 || index >= v.depth) {
            return e.invalid(fmt::format(
                "vision_config.deepstack_visual_indexes[{}] is {}, expected 0..{} (depth {})", i,
                index, v.depth - 1, v.depth));
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (v.deepstack_visual_indexes[j] == index) {
                return e.invalid(fmt::format(
                    "vision_config.deepstack_visual_indexes lists block {} twice", index));
            }
        }
    }
    if (v.deepstack_visual_indexes.size() > std::size_t(t.num_hidden_layers)) {
        return e.invalid(
            fmt::format("vision_config has {} deepstack taps but the text model only {} layers",
                        v.deepstack_visual_indexes.size(), t.num_hidden_layers));
    }
    for (auto [key, id] : {std::pair{"image_token_id", c.image_token_id},
                           std::pair{"video_token_id", c.video_token_id},
                           std::pair{"vision_start_token_id", c.vision_start_token_id},
                           std::pair{"vision_end_token_id", c.vision_end_token_id}}) {
        if (id < 0 || id >= t.vocab_size) {
            return e.invalid(
                fmt::format("{} {} is outside the vocabulary of {}", key, id, t.vocab_size));
        }
    }
    return base::Status();
}

}  // namespace

base::Status validate_model_config(const ModelConfig& c, std::string_view what) {
    const ConfigErrors e{what};
    if (c.model_type != "qwen3_vl") {
        return e.unsupported(
            fmt::format("model_type '{}' is not supported (expected 'qwen3_vl')", c.model_type));
    }
    QVL_TRY(validate_text_config(c.text, e));
    QVL_TRY(validate_vision_config(c.vision, e));
    return validate_model_links(c, e);
}

base::Result<ModelConfig> parse_model_config(std::string_view json_text, std::string_view what) {
    QVL_ASSIGN_OR_RETURN(const JsonValue root, io::parse_json(json_text, what));
    if (!root.is_object()) {
        return base::error(ErrorCode::kCorruptFile, "{}: expected a JSON object, got {}", what,
                           JsonValue::type_name(root.type()));
    }
    const ObjectReader top(what, "", root);
    ModelConfig config;
    QVL_TRY(top.string("model_type", &config.model_type));
    if (config.model_type != "qwen3_vl") {
        return base::error(ErrorCode::kUnsupported,
                           "{}: model_type '{}' is not supported (expected 'qwen3_vl')", what,
                           config.model_type);
    }
    QVL_ASSIGN_OR_RETURN(const JsonValue* text_json, top.object("text_config"));
    QVL_ASSIGN_OR_RETURN(const JsonValue* vision_json, top.object("vision_config"));
    QVL_TRY(parse_text(ObjectReader(what, "text_config.", *text_json), &config.text));
    QVL_TRY(parse_vision(ObjectReader(what, "vision_config.", *vision_json), &config.vision));

    // transformers writes tie_word_embeddings at the top level (4.57) or in text_config (v5);
    // the top level wins when both are present. Absent everywhere: untied, as in the HF default.
    bool tie = config.text.tie_word_embeddings;
    QVL_TRY(top.boolean("tie_word_embeddings", &tie));
    config.tie_word_embeddings = tie;
    config.text.tie_word_embeddings = tie;

    QVL_TRY(top.token_id("image_token_id", &config.image_token_id));
    QVL_TRY(top.token_id("video_token_id", &config.video_token_id));
    QVL_TRY(top.token_id("vision_start_token_id", &config.vision_start_token_id));
    QVL_TRY(top.token_id("vision_end_token_id", &config.vision_end_token_id));
    QVL_TRY(validate_model_config(config, what));
    return config;
}

base::Result<ModelConfig> load_model_config(const std::filesystem::path& config_json) {
    QVL_ASSIGN_OR_RETURN(const std::string text,
                         io::read_text_file(config_json, std::uint64_t(16) << 20));
    return parse_model_config(text, config_json.string());
}

base::Result<GenerationConfig> load_generation_config(const std::filesystem::path& path) {
    GenerationConfig g;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return g;
    QVL_ASSIGN_OR_RETURN(const std::string text, io::read_text_file(path, std::uint64_t(16) << 20));
    const std::string what = path.string();
    QVL_ASSIGN_OR_RETURN(const JsonValue root, io::parse_json(text, what));
    if (!root.is_object()) {
        return base::error(ErrorCode::kCorruptFile, "{}: expected a JSON object, got {}", what,
                           JsonValue::type_name(root.type()));
    }
    const ObjectReader r(what, "", root);
    QVL_TRY(r.boolean("do_sample", &g.do_sample));
    double temperature = g.temperature;
    double top_p = g.top_p;
    double penalty = g.repetition_penalty;
    std::int64_t top_k = g.top_k;
    QVL_TRY(r.number("temperature", &temperature, false));
    QVL_TRY(r.number("top_p", &top_p, false));
    QVL_TRY(r.number("repetition_penalty", &penalty, false));
    QVL_TRY(r.integer("top_k", &top_k, false));
    if (!(temperature >= 0.0) || !std::isfinite(temperature)) {
        return base::error(ErrorCode::kInvalidArgument, "{}: 'temperature' is {}, expected >= 0",
                           what, temperature);
    }
    if (!(top_p > 0.0 && top_p <= 1.0)) {
        return base::error(ErrorCode::kInvalidArgument, "{}: 'top_p' is {}, expected (0, 1]", what,
                           top_p);
    }
    if (!(penalty > 0.0) || !std::isfinite(penalty)) {
        return base::error(ErrorCode::kInvalidArgument,
                           "{}: 'repetition_penalty' is {}, expected > 0", what, penalty);
    }
    if (top_k < 0 || top_k > kMaxDim) {
        return base::error(ErrorCode::kInvalidArgument, "{}: 'top_k' is {}, expected 0..{}", what,
                           top_k, kMaxDim);
    }
    g.temperature = float(temperature);
    g.top_p = float(top_p);
    g.repetition_penalty = float(penalty);
    g.top_k = int(top_k);
    if (r.optional("pad_token_id") != nullptr) QVL_TRY(r.token_id("pad_token_id", &g.pad_token_id));
    if (r.optional("bos_token_id") != nullptr) QVL_TRY(r.token_id("bos_token_id", &g.bos_token_id));
    if (const JsonValue* eos = r.optional("eos_token_id"); eos != nullptr) {
        if (eos->is_array()) {
            std::vector<int> ids;
            QVL_TRY(r.int_list("eos_token_id", &ids));
            for (const int id : ids) {
                if (id < 0) {
                    return base::error(ErrorCode::kInvalidArgument,
                                       "{}: 'eos_token_id' holds {}, not a token id", what, id);
                }
                g.eos_token_ids.push_back(id);
            }
        } else {
            std::int32_t id = 0;
            QVL_TRY(r.token_id("eos_token_id", &id));
            g.eos_token_ids.push_back(id);
        }
    }
    return g;
}

}  // namespace qvl::model
