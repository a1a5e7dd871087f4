// Session: the vision tower (whole or in bounded pieces) and the visual features waiting for
// the next prefill.
#include <algorithm>
#include <cstring>
#include <limits>

#include "base/check.h"
#include "base/timer.h"
#include "graph/builder.h"
#include "model/vision_encoder.h"
#include "runtime/session.h"
#include "runtime/session_guarded.h"

namespace qvl::runtime {

using base::ErrorCode;
using session_detail::guarded;

base::Status Session::refuse_while_encoding(const char* what) const {
    if (vision_job_.active && vision_arena_.empty()) {
        return base::error(ErrorCode::kInvalidArgument,
                           "{} while an image is being encoded in a one-slot session", what);
    }
    return base::Status();
}

std::span<const float> Session::image_features(int image) const {
    if (image < 0 || image >= int(images_.size())) return {};
    const int hidden = model_->config().text.hidden_size;
    const EncodedImage& e = images_[image];
    return {visual_.as<float>() + std::size_t(e.first_row) * hidden,
            std::size_t(e.n_tokens) * hidden};
}

std::vector<float> Session::image_feature_levels(int image) const {
    std::vector<float> out;
    if (image < 0 || image >= int(images_.size())) return out;
    const std::size_t hidden = std::size_t(model_->config().text.hidden_size);
    const EncodedImage& e = images_[std::size_t(image)];
    const std::size_t n = std::size_t(e.n_tokens) * hidden;
    const std::size_t row0 = std::size_t(e.first_row) * hidden;
    out.reserve(n * (1 + deepstack_ptrs_.size()));
    out.insert(out.end(), visual_.as<float>() + row0, visual_.as<float>() + row0 + n);
    for (const float* level : deepstack_ptrs_)
        out.insert(out.end(), level + row0, level + row0 + n);
    return out;
}

base::Status Session::add_encoded_image(const model::ImageGrid& grid, std::span<const float> levels,
                                        bool video_frame) {
    const std::size_t hidden = std::size_t(model_->config().text.hidden_size);
    const std::int64_t tokens = std::int64_t(grid.t) * grid.h * grid.w;
    if (tokens < 1 || tokens > max_image_tokens_ ||
        levels.size() != std::size_t(tokens) * hidden * (1 + deepstack_ptrs_.size())) {
        return base::error(ErrorCode::kInvalidArgument,
                           "image features of {} values do not match a {}x{}x{} grid",
                           levels.size(), grid.t, grid.h, grid.w);
    }
    if (visual_rows_used_ + tokens > kv_.capacity()) {
        return base::error(ErrorCode::kOutOfRange, "images need {} tokens but the context holds {}",
                           visual_rows_used_ + tokens, kv_.capacity());
    }
    const std::size_t n = std::size_t(tokens) * hidden;
    const std::size_t row0 = std::size_t(visual_rows_used_) * hidden;
    std::copy(levels.begin(), levels.begin() + std::ptrdiff_t(n), visual_.as<float>() + row0);
    for (std::size_t l = 0; l < deepstack_ptrs_.size(); ++l) {
        const auto src = levels.begin() + std::ptrdiff_t((l + 1) * n);
        std::copy(src, src + std::ptrdiff_t(n), deepstack_ptrs_[l] + row0);
    }
    images_.push_back({.n_tokens = int(tokens),
                       .first_row = visual_rows_used_,
                       .grid = grid,
                       .video_frame = video_frame});
    visual_rows_used_ += int(tokens);
    return base::Status();
}

base::Status Session::encode_image(const image::PreprocessedImage& image) {
    QVL_TRY(begin_encode_image(image));
    for (bool done = false; !done;) {
        QVL_TRY(encode_image_next(std::numeric_limits<double>::infinity(), &done));
    }
    return base::Status();
}

base::Status Session::begin_encode_image(const image::PreprocessedImage& image) {
    vision_job_.active = false;
    return guarded("encoding an image", [&]() -> base::Status {
        const model::VisionConfig& vc = model_->config().vision;
        const int m = vc.spatial_merge_size;
        const int n = image.num_patches();
        const int tokens = image.num_image_tokens();
        if (n > max_patches_) {
            return base::error(ErrorCode::kOutOfRange,
                               "image of {} visual tokens is over this session's budget of {}",
                               tokens, max_image_tokens_);
        }
        QVL_TRY(check_context_fits(visual_rows_used_, tokens, kv_.capacity(), "the images"));
        const model::VisionWeights& w = model_->weights().vision();
        model::VisionGraphInputs in =
            vision_inputs_.prepare(vc, w, image.grid_t, image.grid_h, image.grid_w, *kernels_);
        const bool fused =
            fused_patch_embed_ && image.grid_t == 1 &&
            image.resized.rgb.size() == std::size_t(image.resized_height) * image.resized_width * 3;
        if (fused) {  // patches gathered from the resized image inside the GEMM packing
            in.rgb = image.resized.rgb.data();
            in.image_height = image.resized_height;
            in.image_width = image.resized_width;
            in.lut = pixel_lut_;
        } else if (image.pixel_values.size() == std::size_t(n) * w.patch_embed.cols) {
            in.pixel_values = const_cast<float*>(image.pixel_values.data());
        } else {
            return base::error(ErrorCode::kInvalidArgument,
                               "image has neither its resized pixels nor its pixel_values");
        }
        vision_graph_.clear();
        graph::GraphBuilder g(&vision_graph_, gemm_precision_, attention_precision_);
        vision_job_.out = model::build_vision_graph(g, vc, w, in);
        const std::size_t need = planner_.plan(vision_graph_);
        QVL_CHECK(need <= (vision_arena_.empty() ? arena_.size() : vision_arena_.size()),
                  "vision graph larger than the reserved arena");
        populate_arena(true, need);
        vision_job_.next_node = 0;
        vision_job_.tokens = tokens;
        vision_job_.grid = {.t = image.grid_t, .h = image.grid_h / m, .w = image.grid_w / m};
        vision_job_.video_frame = image.video_frame;
        vision_job_.active = true;
        return base::Status();
    });
}

base::Status Session::encode_image_next(double budget_ms, bool* done) {
    *done = false;
    if (!vision_job_.active) {
        return base::error(ErrorCode::kInvalidArgument, "no image encode in progress");
    }
    return guarded("encoding an image", [&]() -> base::Status {
        // The vision observer sees this piece's nodes only (decode steps may run in between).
        if (vision_observer_) executor_.set_observer(vision_observer_);
        const double deadline = base::now_ms() + std::max(0.0, budget_ms);
        vision_job_.next_node = executor_.run_range(
            vision_graph_, vision_arena(), vision_job_.next_node, vision_graph_.nodes.size(),
            std::min(deadline, graph::Executor::kNoDeadline));
        if (vision_observer_) executor_.set_observer(observer_);
        if (vision_job_.next_node < vision_graph_.nodes.size()) return base::Status();

        vision_job_.active = false;
        const int tokens = vision_job_.tokens;
        QVL_TRY(check_context_fits(visual_rows_used_, tokens, kv_.capacity(), "the images"));
        const int out_hidden = model_->config().text.hidden_size;
        const std::size_t bytes = std::size_t(tokens) * out_hidden * sizeof(float);
        const std::size_t row0 = std::size_t(visual_rows_used_) * out_hidden;
        const model::VisionGraphOutputs& out = vision_job_.out;
        std::memcpy(visual_.as<float>() + row0,
                    executor_.data(vision_graph_, out.image_embeds, vision_arena()), bytes);
        for (std::size_t j = 0; j < out.deepstack.size(); ++j) {
            std::memcpy(deepstack_ptrs_[j] + row0,
                        executor_.data(vision_graph_, out.deepstack[j], vision_arena()), bytes);
        }
        images_.push_back({.n_tokens = tokens,
                           .first_row = visual_rows_used_,
                           .grid = vision_job_.grid,
                           .video_frame = vision_job_.video_frame});
        visual_rows_used_ += tokens;
        *done = true;
        return base::Status();
    });
}

}  // namespace qvl::runtime
