#include "model/quantize.h"

#include <algorithm>
#include <cstdint>

#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "io/mapped_file.h"
#include "kernels/gemm_q4.h"

namespace qvl::model {
namespace {

std::size_t element_bytes(kernels::WeightType t) { return t == kernels::WeightType::kBF16 ? 2 : 4; }

// How one matrix is quantized.
struct Format {
    int bits = 8;
    int block = 64;

    std::size_t data_bytes(const Matrix& m) const {
        return bits == 4 ? kernels::q4_data_bytes(m.rows, m.cols, block)
                         : kernels::q8_data_bytes(m.rows, m.cols, block);
    }
    std::size_t scale_bytes(const Matrix& m) const {
        return bits == 4 ? kernels::q4_scale_bytes(m.rows, m.cols, block)
                         : kernels::q8_scale_bytes(m.rows, m.cols, block);
    }
    kernels::Q8Matrix describe(int rows, int cols, std::byte* q, std::byte* scales) const {
        if (bits == 4) {
            return kernels::q4_describe(rows, cols, block, reinterpret_cast<std::uint8_t*>(q),
                                        reinterpret_cast<std::uint16_t*>(scales));
        }
        return kernels::q8_describe(rows, cols, block, reinterpret_cast<std::int8_t*>(q),
                                    reinterpret_cast<float*>(scales));
    }
};

struct Part {
    Matrix* m = nullptr;
    Format format;
};

// Whether parts can be read as one matrix of their stacked rows: the same k and format, whole
// 16-row panels each (their quantized panels then lie back to back), at least two of them.
bool stackable(const std::vector<Part>& parts) {
    if (parts.size() < 2) return false;
    for (const Part& p : parts) {
        if (p.m->cols != parts[0].m->cols || p.m->rows % kernels::kQ8Panel != 0 ||
            p.format.bits != parts[0].format.bits || p.format.block != parts[0].format.block) {
            return false;
        }
    }
    return true;
}

// Panels [p0, p1) of m's source into qm.
void quantize_panels(const Matrix& m, const kernels::Q8Matrix& qm, int p0, int p1,
                     kernels::Isa isa) {
    if (qm.bits == 4) return kernels::q4_quantize_panels(m.data, m.type, m.ld, qm, p0, p1, isa);
    kernels::q8_quantize_panels(m.data, m.type, m.ld, qm, p0, p1, isa);
}

// m quantized into qm, whose data and scales lie in buf (at `spans`), on the pool.
// The storage spans are [q_at, q_at + q_bytes) and [s_at, s_at + s_bytes).
struct QuantSpans {
    std::size_t q_at, q_bytes, s_at, s_bytes;
};

void quantize_into(const Matrix& m, const kernels::Q8Matrix& qm, base::AlignedBuffer* buf,
                   const QuantSpans& spans, base::ThreadPool& pool, kernels::Isa isa) {
    const std::size_t q_at = spans.q_at, q_bytes = spans.q_bytes;
    const std::size_t s_at = spans.s_at, s_bytes = spans.s_bytes;
    // Panels are independent: a fixed split, so the result does not depend on threads.
    const int chunks = std::min(qm.panels, 64);
    pool.parallel_for(chunks, [&](int c) {
        const int p0 = int(std::int64_t(qm.panels) * c / chunks);
        const int p1 = int(std::int64_t(qm.panels) * (c + 1) / chunks);
        // The chunk's share of the fresh pages mapped in one call each, not one fault
        // per page (as PanelWeights::rearrange does; the share is proportional, and a
        // page populated by both neighbours is simply mapped once).
        const auto share = [&](std::size_t at, std::size_t bytes) {
            const std::size_t lo = bytes * std::size_t(p0) / std::size_t(qm.panels);
            const std::size_t hi = bytes * std::size_t(p1) / std::size_t(qm.panels);
            buf->populate(at + lo, hi - lo);
        };
        share(q_at, q_bytes);
        share(s_at, s_bytes);
        quantize_panels(m, qm, p0, p1, isa);
    });
}

}  // namespace

// Matrices quantized into one buffer, one after another: q, k and v of a layer (stacked into
// that layer's qkv when whole panels each in one format, so one product serves all three), then
// every other target alone.
struct QuantizedText::Group {
    std::vector<Part> parts;
    Matrix* stacked = nullptr;
};

namespace {

std::vector<QuantizedText::Group> groups_of(ModelWeights& w, const QuantizeOptions& o) {
    const Format main{o.bits, o.block};
    const Format int8{8, o.bits == 4 ? o.int8_block : o.block};
    const auto pick = [&](bool keep) { return o.bits == 4 && keep ? int8 : main; };
    std::vector<QuantizedText::Group> groups;
    for (TextLayerWeights& l : w.mutable_text().layers) {
        groups.push_back(
            {.parts = {{&l.q, main}, {&l.k, main}, {&l.v, pick(o.v_int8)}}, .stacked = &l.qkv});
        for (Matrix* m : {&l.o, &l.gate, &l.up}) groups.push_back({.parts = {{m, main}}});
        groups.push_back({.parts = {{&l.down, pick(o.down_int8)}}});
    }
    if (o.lm_head) groups.push_back({.parts = {{&w.mutable_text().lm_head, pick(o.lm_head_int8)}}});
    return groups;
}

std::vector<QuantizedText::Group> vision_groups(ModelWeights& w, int block) {
    std::vector<QuantizedText::Group> groups;
    const auto add = [&](Matrix& m) {
        groups.push_back({.parts = {{&m, {8, block > 0 ? block : kernels::q8_row_block(m.cols)}}}});
    };
    VisionWeights& v = w.mutable_vision();
    for (VisionBlockWeights& b : v.blocks) {
        for (Matrix* m : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) add(*m);
    }
    add(v.merger.fc1);
    add(v.merger.fc2);
    for (MergerWeights& d : v.deepstack) {
        add(d.fc1);
        add(d.fc2);
    }
    return groups;
}

}  // namespace

base::Result<std::unique_ptr<QuantizedText>> QuantizedText::quantize_vision(
    ModelWeights& w, const VisionQuantizeOptions& options) {
    if (options.block != 0 && !kernels::q8_block_ok(options.block)) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "int8 vision weights: block size {} (use 0 for per-row scales, 32, 64 "
                           "or a multiple of 128)",
                           options.block);
    }
    std::vector<Group> groups = vision_groups(w, options.block);
    auto out = std::unique_ptr<QuantizedText>(new QuantizedText());
    QVL_TRY(out->run(w, groups, options.release_source, options.threads));
    return out;
}

base::Result<std::unique_ptr<QuantizedText>> QuantizedText::quantize(
    ModelWeights& w, const QuantizeOptions& options) {
    if (options.bits != 8 && options.bits != 4) {
        return base::error(base::ErrorCode::kInvalidArgument,
                           "quantized weights: {} bits (use 8 or 4)", options.bits);
    }
    for (const int block : {options.block, options.int8_block}) {
        if (!kernels::q8_block_ok(block)) {
            return base::error(base::ErrorCode::kInvalidArgument,
                               "quantized weights: block size {} (use 32, 64 or a multiple of 128)",
                               block);
        }
    }
    std::vector<Group> groups = groups_of(w, options);
    auto out = std::unique_ptr<QuantizedText>(new QuantizedText());
    out->format_ = options.bits == 4 ? WeightFormat::kQ4 : WeightFormat::kQ8;
    QVL_TRY(out->run(w, groups, options.release_source, options.threads));
    return out;
}

base::Status QuantizedText::run(ModelWeights& w, std::vector<Group>& groups, bool release_source,
                                int threads) {
    matrices_.reserve(groups.size() * 4);  // parts and stacked views: addresses are stable
    storage_.reserve(groups.size());
    base::ThreadPool pool(std::max(threads, 1));
    const kernels::Isa isa = kernels::best_isa();
    for (Group& group : groups) {
        const std::size_t wanted = group.parts.size();
        std::erase_if(group.parts,
                      [](const Part& p) { return p.m->type == kernels::WeightType::kQ8; });
        if (group.parts.empty()) continue;
        std::size_t qbytes = 0, sbytes = 0;
        for (const Part& p : group.parts) {
            qbytes += p.format.data_bytes(*p.m);
            sbytes += p.format.scale_bytes(*p.m);
        }
        QVL_ASSIGN_OR_RETURN(
            base::AlignedBuffer buf,
            base::AlignedBuffer::allocate(qbytes + sbytes, group.parts[0].m->name, false));
        // Transparent huge pages, by measurement (bench/README.md): a decode step streams all
        // 1.8 GB of int8 weights and scales, and fewer page walks made it faster. The bf16
        // panels, tried the same way, gained nothing (weight_panels_load.cpp).
        base::advise_huge_pages(buf.data(), buf.size());
        std::size_t q_at = 0, s_at = qbytes;
        for (const Part& part : group.parts) {
            Matrix* m = part.m;
            const kernels::Q8Matrix qm =
                part.format.describe(m->rows, m->cols, buf.data() + q_at, buf.data() + s_at);
            const std::size_t q_bytes = part.format.data_bytes(*m);
            const std::size_t s_bytes = part.format.scale_bytes(*m);
            quantize_into(*m, qm, &buf, {q_at, q_bytes, s_at, s_bytes}, pool, isa);
            if (release_source && !w.is_copy(m->data)) {
                io::release_mapped_pages(m->data, (std::size_t(m->rows - 1) * std::size_t(m->ld) +
                                                   std::size_t(m->cols)) *
                                                      element_bytes(m->type));
            }
            q_at += q_bytes;
            s_at += s_bytes;
            matrices_.push_back(qm);
            m->data = &matrices_.back();
            m->type = kernels::WeightType::kQ8;
            m->ld = m->cols;
        }
        if (group.stacked != nullptr && group.parts.size() == wanted && stackable(group.parts)) {
            // Whole panels each, back to back in data and in scales: the stacked matrix's panel
            // p is part p's, then the next part's, exactly as described over the joint storage.
            int rows = 0;
            for (const Part& p : group.parts) rows += p.m->rows;
            const Matrix& first = *group.parts[0].m;
            matrices_.push_back(
                group.parts[0].format.describe(rows, first.cols, buf.data(), buf.data() + qbytes));
            *group.stacked = Matrix{.data = &matrices_.back(),
                                    .type = kernels::WeightType::kQ8,
                                    .rows = rows,
                                    .cols = first.cols,
                                    .ld = first.cols,
                                    .name = "self_attn.qkv (q_proj | k_proj | v_proj)"};
        }
        bytes_ += qbytes + sbytes;
        storage_.push_back(std::move(buf));
    }
    return base::Status();
}

}  // namespace qvl::model
