#include "model/quantize.h"

#include <algorithm>
#include <cstdint>

#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "io/mapped_file.h"

namespace qvl::model {
namespace {

std::size_t element_bytes(kernels::WeightType t) { return t == kernels::WeightType::kBF16 ? 2 : 4; }

// Whether parts can be read as one matrix of their stacked rows: the same k, whole 16-row panels
// each (their quantized panels then lie back to back), at least two of them.
bool stackable(const std::vector<Matrix*>& parts) {
    if (parts.size() < 2) return false;
    for (const Matrix* m : parts) {
        if (m->cols != parts[0]->cols || m->rows % kernels::kQ8Panel != 0) return false;
    }
    return true;
}

}  // namespace

base::Result<std::unique_ptr<QuantizedText>> QuantizedText::quantize(
    ModelWeights& w, const QuantizeOptions& options) {
    if (!kernels::q8_block_ok(options.block)) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "int8 weights: block size {} (use 32, 64 or 128)", options.block);
    }
    // Matrices quantized into one buffer, one after another: q, k and v of a layer (stacked
    // into that layer's qkv when whole panels each, so one product serves all three), then
    // every other target alone.
    struct Group {
        std::vector<Matrix*> parts;
        Matrix* stacked = nullptr;
    };
    std::vector<Group> groups;
    for (TextLayerWeights& l : w.mutable_text().layers) {
        groups.push_back({.parts = {&l.q, &l.k, &l.v}, .stacked = &l.qkv});
        for (Matrix* m : {&l.o, &l.gate, &l.up, &l.down}) groups.push_back({.parts = {m}});
    }
    if (options.lm_head) groups.push_back({.parts = {&w.mutable_text().lm_head}});

    auto out = std::unique_ptr<QuantizedText>(new QuantizedText());
    out->matrices_.reserve(groups.size() * 4);  // parts and stacked views: addresses are stable
    out->storage_.reserve(groups.size());
    base::ThreadPool pool(std::max(options.threads, 1));
    const kernels::Isa isa = kernels::best_isa();
    for (Group& group : groups) {
        const std::size_t wanted = group.parts.size();
        std::erase_if(group.parts,
                      [](const Matrix* m) { return m->type == kernels::WeightType::kQ8; });
        if (group.parts.empty()) continue;
        std::size_t qbytes = 0, sbytes = 0;
        for (const Matrix* m : group.parts) {
            qbytes += kernels::q8_data_bytes(m->rows, m->cols, options.block);
            sbytes += kernels::q8_scale_bytes(m->rows, m->cols, options.block);
        }
        QVL_ASSIGN_OR_RETURN(
            base::AlignedBuffer buf,
            base::AlignedBuffer::allocate(qbytes + sbytes, group.parts[0]->name, false));
        // Transparent huge pages, by measurement: a decode step streams all 1.8 GB of int8
        // weights and scales (Zen 1, 2 threads, text-only decode of 64 tokens, 5 alternated
        // pairs: 100-116 -> 93-98 ms/token; load +0.2-0.3 s). Fewer page walks is the likely
        // reason; this guest has no counters to show it. The bf16 panels, tried the same way,
        // gained nothing in decode and loaded 2x slower (weight_panels_load.cpp).
        base::advise_huge_pages(buf.data(), buf.size());
        auto* const q0 = reinterpret_cast<std::int8_t*>(buf.data());
        auto* const s0 = reinterpret_cast<float*>(buf.data() + qbytes);
        std::int8_t* q = q0;
        float* s = s0;
        for (Matrix* m : group.parts) {
            const kernels::Q8Matrix qm =
                kernels::q8_describe(m->rows, m->cols, options.block, q, s);
            // Panels are independent: a fixed split, so the result does not depend on threads.
            const int chunks = std::min(qm.panels, 64);
            const std::size_t q_at = std::size_t(q - q0),
                              q_bytes = kernels::q8_data_bytes(m->rows, m->cols, options.block);
            const std::size_t s_at = qbytes + sizeof(float) * std::size_t(s - s0),
                              s_bytes = kernels::q8_scale_bytes(m->rows, m->cols, options.block);
            pool.parallel_for(chunks, [&](int c) {
                const int p0 = int(std::int64_t(qm.panels) * c / chunks);
                const int p1 = int(std::int64_t(qm.panels) * (c + 1) / chunks);
                // The chunk's share of the fresh pages mapped in one call each, not one fault
                // per page (as PanelWeights::rearrange does; the share is proportional, and a
                // page populated by both neighbours is simply mapped once).
                const auto share = [&](std::size_t at, std::size_t bytes) {
                    const std::size_t lo = bytes * std::size_t(p0) / std::size_t(qm.panels);
                    const std::size_t hi = bytes * std::size_t(p1) / std::size_t(qm.panels);
                    buf.populate(at + lo, hi - lo);
                };
                share(q_at, q_bytes);
                share(s_at, s_bytes);
                kernels::q8_quantize_panels(m->data, m->type, m->ld, qm, p0, p1, isa);
            });
            if (options.release_source && !w.is_copy(m->data)) {
                io::release_mapped_pages(m->data, (std::size_t(m->rows - 1) * std::size_t(m->ld) +
                                                   std::size_t(m->cols)) *
                                                      element_bytes(m->type));
            }
            q += q_bytes;
            s += s_bytes / sizeof(float);
            out->matrices_.push_back(qm);
            m->data = &out->matrices_.back();
            m->type = kernels::WeightType::kQ8;
            m->ld = m->cols;
        }
        if (group.stacked != nullptr && group.parts.size() == wanted && stackable(group.parts)) {
            // Whole panels each, back to back in data and in scales: the stacked matrix's panel
            // p is part p's, then the next part's, exactly as described over the joint storage.
            int rows = 0;
            for (const Matrix* m : group.parts) rows += m->rows;
            const Matrix& first = *group.parts[0];
            out->matrices_.push_back(kernels::q8_describe(rows, first.cols, options.block, q0, s0));
            *group.stacked = Matrix{.data = &out->matrices_.back(),
                                    .type = kernels::WeightType::kQ8,
                                    .rows = rows,
                                    .cols = first.cols,
                                    .ld = first.cols,
                                    .name = "self_attn.qkv (q_proj | k_proj | v_proj)"};
        }
        out->bytes_ += qbytes + sbytes;
        out->storage_.push_back(std::move(buf));
    }
    return out;
}

}  // namespace qvl::model
