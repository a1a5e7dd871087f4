#include "model/quantize.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "base/thread_pool.h"

namespace qvl::model {
namespace {

std::size_t element_bytes(kernels::WeightType t) { return t == kernels::WeightType::kBF16 ? 2 : 4; }

// Hands the whole pages inside [p, p + bytes) back to the kernel. The mapping is a read-only
// file mapping, so a later touch (a tied embedding row) re-reads the page from the file.
void release_pages(const void* p, std::size_t bytes) {
    const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    const auto begin = (std::uintptr_t(p) + page - 1) / page * page;
    const auto end = (std::uintptr_t(p) + bytes) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

base::Result<std::unique_ptr<QuantizedText>> QuantizedText::quantize(
    ModelWeights& w, const QuantizeOptions& options) {
    if (!kernels::q8_block_ok(options.block)) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "int8 weights: block size {} (use 32, 64 or 128)", options.block);
    }
    std::vector<Matrix*> targets;
    for (TextLayerWeights& l : w.mutable_text().layers) {
        for (Matrix* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) targets.push_back(m);
    }
    if (options.lm_head) targets.push_back(&w.mutable_text().lm_head);

    auto out = std::unique_ptr<QuantizedText>(new QuantizedText());
    out->matrices_.reserve(targets.size());
    out->storage_.reserve(targets.size());
    base::ThreadPool pool(std::max(options.threads, 1));
    const kernels::Isa isa = kernels::best_isa();
    for (Matrix* m : targets) {
        if (m->type == kernels::WeightType::kQ8) continue;
        const std::size_t qbytes = kernels::q8_data_bytes(m->rows, m->cols, options.block);
        const std::size_t sbytes = kernels::q8_scale_bytes(m->rows, m->cols, options.block);
        QVL_ASSIGN_OR_RETURN(base::AlignedBuffer buf,
                             base::AlignedBuffer::allocate(qbytes + sbytes, m->name, false));
        auto* q = reinterpret_cast<std::int8_t*>(buf.data());
        auto* s = reinterpret_cast<float*>(buf.data() + qbytes);
        const kernels::Q8Matrix qm = kernels::q8_describe(m->rows, m->cols, options.block, q, s);
        // Panels are independent: a fixed split, so the result does not depend on threads.
        const int chunks = std::min(qm.panels, 64);
        pool.parallel_for(chunks, [&](int c) {
            const int p0 = int(std::int64_t(qm.panels) * c / chunks);
            const int p1 = int(std::int64_t(qm.panels) * (c + 1) / chunks);
            kernels::q8_quantize_panels(m->data, m->type, m->ld, qm, p0, p1, isa);
        });
        if (options.release_source && !w.is_copy(m->data)) {
            release_pages(m->data,
                          (std::size_t(m->rows - 1) * std::size_t(m->ld) + std::size_t(m->cols)) *
                              element_bytes(m->type));
        }
        out->bytes_ += qbytes + sbytes;
        out->matrices_.push_back(qm);
        out->storage_.push_back(std::move(buf));
        m->data = &out->matrices_.back();
        m->type = kernels::WeightType::kQ8;
        m->ld = m->cols;
    }
    return out;
}

}  // namespace qvl::model
