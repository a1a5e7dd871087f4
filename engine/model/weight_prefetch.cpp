#include "model/weight_prefetch.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace qvl::model {
namespace {

// 4 MiB chunks, up to 8 requested ahead of the one being touched: large requests keep a
// virtual disk busy (~450 MB/s here with 16 MB direct reads, a third of that with small ones).
constexpr std::size_t kChunk = std::size_t(4) << 20;
constexpr int kAhead = 8;

std::size_t page_size() {
    static const std::size_t size = [] {
        const long p = sysconf(_SC_PAGESIZE);
        return p > 0 ? std::size_t(p) : std::size_t(4096);
    }();
    return size;
}

std::size_t element_bytes(kernels::WeightType type) {
    return type == kernels::WeightType::kBF16 ? 2 : 4;
}

// Only the mapped checkpoint is read ahead: load-time copies and int8 matrices (model/quantize.h)
// are in memory already, and touching whole pages around them would read past their allocation.
void add_matrix(const ModelWeights& w, const Matrix& m, std::vector<ByteRange>* out) {
    if (m.data == nullptr || m.rows <= 0 || m.cols <= 0) return;
    if (m.type == kernels::WeightType::kQ8 || m.type == kernels::WeightType::kBF16Panels ||
        w.is_copy(m.data)) {
        return;
    }
    const std::size_t elems = std::size_t(m.rows - 1) * std::size_t(m.ld) + std::size_t(m.cols);
    out->push_back({static_cast<const std::byte*>(m.data), elems * element_bytes(m.type)});
}

// Page-aligned [begin, end) covering [p, p + n).
std::pair<std::uintptr_t, std::uintptr_t> page_span(const std::byte* p, std::size_t n) {
    const std::uintptr_t page = page_size();
    const auto begin = reinterpret_cast<std::uintptr_t>(p) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(p) + n + page - 1) & ~(page - 1);
    return {begin, end};
}

// Whether every page of [p, p + n) is in memory. Errors (e.g. a range outside any mapping)
// count as resident: nothing to read ahead there.
bool resident(const std::byte* p, std::size_t n) {
    const auto [begin, end] = page_span(p, n);
    const std::size_t pages = (end - begin) / page_size();
    unsigned char vec[kChunk / 4096 + 2];
    if (pages > sizeof vec) return false;
    if (mincore(reinterpret_cast<void*>(begin), end - begin, vec) != 0) return true;
    return std::all_of(vec, vec + pages, [](unsigned char v) { return (v & 1) != 0; });
}

void will_need(const std::byte* p, std::size_t n) {
    const auto [begin, end] = page_span(p, n);
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);  // best effort
}

// Maps every page of [p, p + n) into this process, reading it if needed: one system call
// instead of one page fault per 16 pages on the compute threads (0.4 s of CPU for the 2B
// model's 4.3 GB when the compute threads fault them in, 0.24 s this way). False where the
// kernel lacks MADV_POPULATE_READ (before Linux 5.14) or the range is not one mapping.
bool populate(const std::byte* p, std::size_t n) {
#ifdef MADV_POPULATE_READ
    const auto [begin, end] = page_span(p, n);
    return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0;
#else
    static_cast<void>(p);
    static_cast<void>(n);
    return false;
#endif
}

// Reads one byte per page (only inside [p, p + n): the neighbours may not be mapped).
void touch(const std::byte* p, std::size_t n) {
    const std::size_t page = page_size();
    std::uint8_t sink = 0;
    const auto* v = reinterpret_cast<const volatile std::uint8_t*>(p);
    const std::size_t first = page - (reinterpret_cast<std::uintptr_t>(p) & (page - 1));
    if (n > 0) sink ^= v[0];
    for (std::size_t off = first; off < n; off += page) sink ^= v[off];
    static_cast<void>(sink);
}

}  // namespace

std::vector<ByteRange> weights_in_use_order(const ModelWeights& weights, bool lm_head) {
    std::vector<ByteRange> out;
    const VisionWeights& v = weights.vision();
    add_matrix(weights, v.patch_embed, &out);
    add_matrix(weights, v.pos_embed, &out);
    for (const VisionBlockWeights& b : v.blocks) {
        for (const Matrix* m : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) add_matrix(weights, *m, &out);
    }
    for (const MergerWeights& m : v.deepstack) {
        add_matrix(weights, m.fc1, &out);
        add_matrix(weights, m.fc2, &out);
    }
    add_matrix(weights, v.merger.fc1, &out);
    add_matrix(weights, v.merger.fc2, &out);
    const TextWeights& t = weights.text();
    for (const TextLayerWeights& l : t.layers) {
        for (const Matrix* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) {
            add_matrix(weights, *m, &out);
        }
    }
    // The embedding is read a few rows at a time during prefill: read ahead only where it is
    // also the mapped lm_head (tied, not rearranged into panels), read whole at every step. With
    // a logits screen (!lm_head) a step reads a few of its rows: nothing to read ahead.
    if (lm_head) add_matrix(weights, t.lm_head, &out);
    return out;
}

WeightPrefetch::WeightPrefetch(const std::vector<ByteRange>& ranges) {
    // The chunks in order, flattened so the read-ahead window crosses matrix boundaries. Built
    // here so that the thread never allocates (tests count allocations during decode steps).
    for (const ByteRange& r : ranges) {
        for (std::size_t off = 0; off < r.size; off += kChunk) {
            chunks_.push_back({r.data + off, std::min(kChunk, r.size - off)});
        }
    }
    cold_.assign(chunks_.size(), 0);
    thread_ = std::thread([this] { run(); });
}

WeightPrefetch::~WeightPrefetch() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
}

void WeightPrefetch::wait() const {
    while (!done_.load(std::memory_order_acquire)) std::this_thread::yield();
}

void WeightPrefetch::run() {
    const std::vector<ByteRange>& chunks = chunks_;
    std::size_t asked = 0;  // chunks [0, asked) were given to MADV_WILLNEED (or were resident)
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        if (stop_.load(std::memory_order_relaxed)) break;
        for (; asked < std::min(chunks.size(), i + 1 + kAhead); ++asked) {
            // One mincore per chunk: on a warm 4.3 GB file a second one cost ~0.2 s of CPU.
            cold_[asked] = !resident(chunks[asked].data, chunks[asked].size);
            if (cold_[asked]) will_need(chunks[asked].data, chunks[asked].size);
        }
        const bool cold = cold_[i] != 0;
        if (cold) cold_bytes_.fetch_add(chunks[i].size, std::memory_order_relaxed);
        if (!populate(chunks[i].data, chunks[i].size) && cold)
            touch(chunks[i].data, chunks[i].size);
    }
    done_.store(true, std::memory_order_release);
}

}  // namespace qvl::model
