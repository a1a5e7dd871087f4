#include "model/weight_panels_load.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/weight_panels.h"

namespace qvl::model {
namespace {

std::size_t round_up64(std::size_t n) { return (n + 63) / 64 * 64; }

// Hands the whole pages inside [p, p + bytes) back to the kernel (a read-only file mapping: a
// later touch, e.g. a tied embedding row, re-reads the page from the file).
void release_pages(const void* p, std::size_t bytes) {
    const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    const auto begin = (std::uintptr_t(p) + page - 1) / page * page;
    const auto end = (std::uintptr_t(p) + bytes) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

base::Result<std::unique_ptr<PanelText>> PanelText::rearrange(ModelWeights& w, int threads,
                                                              bool release_source) {
    std::vector<Matrix*> targets;
    for (TextLayerWeights& l : w.mutable_text().layers) {
        for (Matrix* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) targets.push_back(m);
    }
    targets.push_back(&w.mutable_text().lm_head);
    std::erase_if(targets, [](const Matrix* m) {
        return m->type != kernels::WeightType::kBF16 || m->rows <= 0 || m->cols <= 0;
    });
    std::vector<std::size_t> offsets;
    std::size_t total = 0;
    for (const Matrix* m : targets) {
        offsets.push_back(total);
        total += round_up64(kernels::panel_bytes(m->rows, m->cols));
    }
    auto out = std::unique_ptr<PanelText>(new PanelText());
    if (total == 0) return out;
    QVL_ASSIGN_OR_RETURN(out->storage_,
                         base::AlignedBuffer::allocate(total, "text weight panels", false));
    // Huge pages where the kernel offers them: ~1600x fewer page faults while writing GBs.
    madvise(out->storage_.data(), total, MADV_HUGEPAGE);

    base::ThreadPool pool(std::max(threads, 1));
    for (std::size_t i = 0; i < targets.size(); ++i) {
        Matrix* m = targets[i];
        auto* dst = reinterpret_cast<std::uint32_t*>(out->storage_.data() + offsets[i]);
        const auto* src = static_cast<const std::uint16_t*>(m->data);
        const int panels = kernels::panel_count(m->rows);
        // A fixed split: the result does not depend on the thread count.
        const int chunks = std::min(panels, 64);
        pool.parallel_for(chunks, [&](int c) {
            const int p0 = int(std::int64_t(panels) * c / chunks);
            const int p1 = int(std::int64_t(panels) * (c + 1) / chunks);
            kernels::pack_panels(src, m->ld, m->rows, m->cols, p0, p1, dst);
        });
        if (release_source && !w.is_copy(m->data)) {
            release_pages(m->data,
                          (std::size_t(m->rows - 1) * std::size_t(m->ld) + std::size_t(m->cols)) *
                              sizeof(std::uint16_t));
        }
        m->data = dst;
        m->type = kernels::WeightType::kBF16Panels;
        m->ld = kernels::panel_pairs(m->cols);
    }
    return out;
}

}  // namespace qvl::model
