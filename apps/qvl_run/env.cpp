#include "env.h"

#include <cstdlib>
#include <string_view>

#include "common/exit_codes.h"

namespace qvl::app {
namespace {

int unknown_value(std::FILE* err, const char* name, std::string_view value, const char* expected) {
    std::fprintf(err, "qvl-run: error: %s: unknown value '%.*s' (expected %s)\n", name,
                 int(value.size()), value.data(), expected);
    return kExitUsage;
}

}  // namespace

int read_env_options(EnvOptions* out, std::FILE* err, const EnvLookup& lookup) {
    const auto get = [&](const char* name) -> std::string_view {
        const char* v = lookup ? lookup(name) : std::getenv(name);
        return v == nullptr ? std::string_view() : std::string_view(v);
    };
    if (const std::string_view v = get("QVL_PRECISION"); !v.empty()) {
        // "auto" is the default, not a value to ask for: the documented set is the named ones.
        const std::optional<Precision> p = precision_from_name(v);
        if (!p || *p == Precision::kAuto) {
            return unknown_value(err, "QVL_PRECISION", v, precision_choices().c_str());
        }
        out->precision = *p;
    }
    if (const std::string_view v = get("QVL_ISA"); !v.empty()) {
        if (!kernel_tier(v).ok()) {
            return unknown_value(err, "QVL_ISA", v, "scalar, avx2, avx512, avx512bf16");
        }
        out->isa = std::string(v);
    }
    if (const std::string_view v = get("QVL_PROFILE"); !v.empty()) {
        if (v != "0" && v != "1") return unknown_value(err, "QVL_PROFILE", v, "0, 1");
        out->profile = v == "1";
    }
    if (const std::string_view v = get("QVL_LOGITS_SCREEN"); !v.empty()) {
        if (v != "0" && v != "1") return unknown_value(err, "QVL_LOGITS_SCREEN", v, "0, 1");
        out->logits_screen = v == "1";
    }
    out->trace_dir = std::string(get("QVL_TRACE"));
    return -1;
}

void apply_env_options(const EnvOptions& env, SessionOptions* session) {
    if (env.precision) session->precision = *env.precision;
    session->isa = env.isa;
    session->profile = env.profile;
    session->trace_dir = env.trace_dir;
}

SessionOptions session_options(const RunOptions& o, const EnvOptions& env) {
    SessionOptions so;
    so.threads = o.threads;
    so.ctx_size = o.ctx_size;
    so.min_image_tokens = o.image_min_tokens.value_or(0);
    so.max_image_tokens = o.image_max_tokens.value_or(0);
    apply_env_options(env, &so);
    return so;
}

}  // namespace qvl::app
