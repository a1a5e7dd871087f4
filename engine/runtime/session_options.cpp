// What SessionOptions mean: precision names, the kernel tier, the image budget and the GEMM and
// KV element types a session runs with (declared in runtime/session.h).
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/session.h"

namespace qvl::runtime {

namespace {

// The tier a request runs on: the best this CPU has, or the request clamped to it.
kernels::Isa tier_for(std::optional<kernels::Isa> requested) {
    return requested ? kernels::resolve_isa(*requested) : kernels::best_isa();
}

}  // namespace

std::optional<Precision> precision_from_name(std::string_view name) {
    if (name == precision_name(Precision::kAuto)) return Precision::kAuto;
    for (Precision p : kNamedPrecisions) {
        if (name == precision_name(p)) return p;
    }
    return std::nullopt;
}

std::string precision_choices() {
    std::string out;
    for (Precision p : kNamedPrecisions) {
        if (!out.empty()) out += ", ";
        out += precision_name(p);
    }
    return out;
}

const char* precision_name(Precision precision) {
    switch (precision) {
        case Precision::kAuto:
            return "auto";
        case Precision::kF32:
            return "f32";
        case Precision::kBF16:
            return "bf16";
        case Precision::kBF16All:
            return "bf16-all";
        case Precision::kF32KvBF16:
            return "f32-kv-bf16";
    }
    return "unknown";
}

const char* kernel_isa_name(std::optional<kernels::Isa> requested) {
    return kernels::isa_name(tier_for(requested));
}

int default_max_image_tokens(const model::Model& model) {
    return std::clamp(image::max_visual_tokens(model.preprocess()), 1, 4096);
}

image::PreprocessConfig effective_preprocess(const model::Model& model,
                                             const SessionOptions& options) {
    image::PreprocessConfig pp = model.preprocess();
    const std::int64_t per_token = image::pixels_per_visual_token(pp);
    if (options.max_image_tokens > 0) {
        pp.max_pixels = options.max_image_tokens * per_token;
    } else {
        pp.max_pixels = std::min(pp.max_pixels, default_max_image_tokens(model) * per_token);
    }
    if (options.min_image_tokens > 0) pp.min_pixels = options.min_image_tokens * per_token;
    pp.min_pixels = std::min(pp.min_pixels, pp.max_pixels);
    return pp;
}

const kernels::KernelTable& session_kernels(const SessionOptions& options) {
    return kernels::kernels_for(tier_for(options.isa));
}

kernels::GemmPrecision session_gemm_precision(const SessionOptions& options) {
    switch (options.precision) {
        case Precision::kF32:
        case Precision::kF32KvBF16:
            return kernels::GemmPrecision::kF32;
        case Precision::kBF16:
        case Precision::kBF16All:
            return kernels::GemmPrecision::kBF16;
        case Precision::kAuto:
            break;
    }
    // kAuto: bf16 activations only where bf16 products are the tier's own instructions. Without
    // them (AVX2, AVX-512F, scalar) a bf16 product is an f32 FMA over operands rounded first:
    // the same speed as f32 (bench/README.md), for ~1e-2 of logits error that f32 activations
    // do not have.
    return session_kernels(options).bf16_products ? kernels::GemmPrecision::kBF16
                                                  : kernels::GemmPrecision::kF32;
}

kernels::KvType session_kv_type(const SessionOptions& options) {
    // bf16 unless f32 was asked for (the float64 goldens stay exact there): half the bytes, and
    // half what decode attention reads; Hugging Face keeps a bf16 checkpoint's cache in bf16
    // too (faster decode and a smaller peak RSS on AVX2 as well: bench/README.md).
    return options.precision == Precision::kF32 ? kernels::KvType::kF32 : kernels::KvType::kBF16;
}

}  // namespace qvl::runtime
