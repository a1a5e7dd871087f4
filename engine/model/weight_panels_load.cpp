#include "model/weight_panels_load.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "io/mapped_file.h"
#include "kernels/weight_panels.h"

namespace qvl::model {
namespace {

std::size_t round_up64(std::size_t n) { return (n + 63) / 64 * 64; }

// The matrices the rearrangement rewrites: every bf16 linear layer but the patch embedding.
std::vector<Matrix*> panel_targets(ModelWeights& w, bool lm_head) {
    std::vector<Matrix*> targets;
    for (TextLayerWeights& l : w.mutable_text().layers) {
        for (Matrix* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) targets.push_back(m);
    }
    if (lm_head) targets.push_back(&w.mutable_text().lm_head);
    VisionWeights& v = w.mutable_vision();
    for (VisionBlockWeights& b : v.blocks) {
        for (Matrix* m : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) targets.push_back(m);
    }
    for (MergerWeights& m : v.deepstack) {
        targets.push_back(&m.fc1);
        targets.push_back(&m.fc2);
    }
    targets.push_back(&v.merger.fc1);
    targets.push_back(&v.merger.fc2);
    std::erase_if(targets, [](const Matrix* m) {
        return m->type != kernels::WeightType::kBF16 || m->rows <= 0 || m->cols <= 0;
    });
    return targets;
}

// q, k and v of a layer as one matrix of their stacked rows, when the rearrangement left their
// panels contiguous (whole panels each, same k): empty otherwise.
Matrix stacked_rows(const Matrix& q, const Matrix& k, const Matrix& v) {
    Matrix m;
    for (const Matrix* p : {&q, &k, &v}) {
        if (p->type != kernels::WeightType::kBF16Panels || p->cols != q.cols || p->ld != q.ld ||
            p->rows % kernels::kPanelOutputs != 0) {
            return Matrix{};
        }
    }
    const auto* base = static_cast<const std::byte*>(q.data);
    if (k.data != base + kernels::panel_bytes(q.rows, q.cols) ||
        v.data != static_cast<const std::byte*>(k.data) + kernels::panel_bytes(k.rows, k.cols)) {
        return Matrix{};
    }
    m = q;
    m.rows = q.rows + k.rows + v.rows;
    m.name = "self_attn.qkv (q_proj | k_proj | v_proj)";
    return m;
}

}  // namespace

base::Result<std::unique_ptr<PanelWeights>> PanelWeights::rearrange(ModelWeights& w, int threads,
                                                                    bool release_source,
                                                                    bool lm_head) {
    const std::vector<Matrix*> targets = panel_targets(w, lm_head);
    std::vector<std::size_t> offsets;
    std::size_t total = 0;
    for (const Matrix* m : targets) {
        offsets.push_back(total);
        total += round_up64(kernels::panel_bytes(m->rows, m->cols));
    }
    auto out = std::unique_ptr<PanelWeights>(new PanelWeights());
    if (total == 0) return out;
    QVL_ASSIGN_OR_RETURN(out->storage_,
                         base::AlignedBuffer::allocate(total, "weight panels", false));
    // No MADV_HUGEPAGE here, by measurement: with transparent huge pages the 4.2 GB copy of the
    // 2B model took 13-14 s to load on this project's VMs against 2.4-4.4 s with 4 KiB pages
    // (no compaction stalls; the 2 MiB faults themselves were slower). An earlier call here
    // passed aligned_alloc's pointer, which is not page-aligned, so it failed and did nothing.
    // Nor MADV_POPULATE_WRITE / _READ over the whole buffer before the copy: measured, it raised
    // peak RSS by ~440 MB on the 2B model (4675 against 4237 MB) for no reliable gain in load
    // time. Each chunk populates its own pages right before writing them instead (below).

    base::ThreadPool pool(std::max(threads, 1));
    for (std::size_t i = 0; i < targets.size(); ++i) {
        Matrix* m = targets[i];
        auto* dst = reinterpret_cast<std::uint32_t*>(out->storage_.data() + offsets[i]);
        const auto* src = static_cast<const std::uint16_t*>(m->data);
        const std::size_t src_bytes =
            (std::size_t(m->rows - 1) * std::size_t(m->ld) + std::size_t(m->cols)) *
            sizeof(std::uint16_t);
        const int panels = kernels::panel_count(m->rows);
        // A fixed split: the result does not depend on the thread count.
        const int chunks = std::min(panels, 64);
        const std::size_t panel_stride = kernels::panel_bytes(kernels::kPanelOutputs, m->cols);
        pool.parallel_for(chunks, [&](int c) {
            const int p0 = int(std::int64_t(panels) * c / chunks);
            const int p1 = int(std::int64_t(panels) * (c + 1) / chunks);
            // The chunk's destination pages mapped in one call just before it writes them, not
            // one fault each: 4.2 GB of fresh pages for the 2B model, whose faults were most of
            // the load. Measured on a Firecracker guest (Zen 4, 2 threads, 3 alternated runs):
            // load 1.70-1.87 -> 1.31-1.46 s, peak RSS unchanged (unlike populating everything up
            // front, above: these pages are written next anyway). The same for the source pages
            // (MADV_POPULATE_READ on the file mapping) gained nothing.
            out->storage_.populate(offsets[i] + std::size_t(p0) * panel_stride,
                                   std::size_t(p1 - p0) * panel_stride);
            kernels::pack_panels(src, m->ld, m->rows, m->cols, p0, p1, dst);
        });
        if (release_source && !w.is_copy(m->data)) {
            io::release_mapped_pages(m->data, src_bytes);
        }
        m->data = dst;
        m->type = kernels::WeightType::kBF16Panels;
        m->ld = kernels::panel_pairs(m->cols);
    }
    for (TextLayerWeights& l : w.mutable_text().layers) {
        if (l.qkv.data == nullptr) l.qkv = stacked_rows(l.q, l.k, l.v);  // int8 ones are stacked
    }
    return out;
}

}  // namespace qvl::model
