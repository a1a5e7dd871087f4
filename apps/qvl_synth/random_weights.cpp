// Speed matters (4.26 GB must take seconds): the data section is cut into large chunks that
// worker threads generate into their own buffers, a round of them at a time, while the previous
// round is appended in order; there is no per-element call. The generator is counter-based
// (splitmix64's mixer applied to key + index), which makes any chunk computable on its own.
#include "random_weights.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <future>
#include <memory>
#include <span>
#include <system_error>
#include <thread>

#include "base/check.h"

namespace qvl::synth {
namespace {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;

inline std::uint64_t mix64(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::uint64_t tensor_bytes(const TensorSpec& spec) {
    return std::uint64_t(element_count(spec.shape)) * 2;
}

// Where each tensor's bytes start in the data section, and how they are cut into chunks.
struct Plan {
    const std::vector<TensorSpec>* tensors = nullptr;
    std::vector<std::uint64_t> offsets;
    std::uint64_t data_bytes = 0, seed = 0, chunk = 0, n_chunks = 0;
};

using Buffers = std::vector<std::unique_ptr<std::uint16_t[]>>;

// Generates data-section bytes [begin, end) (both even) into out.
void fill_range(const Plan& plan, std::uint64_t begin, std::uint64_t end, std::uint16_t* out) {
    const std::vector<TensorSpec>& tensors = *plan.tensors;
    const std::vector<std::uint64_t>& offsets = plan.offsets;
    // The last tensor starting at or before `begin`.
    std::size_t t =
        std::size_t(std::upper_bound(offsets.begin(), offsets.end(), begin) - offsets.begin() - 1);
    std::uint64_t pos = begin;
    while (pos < end) {
        QVL_CHECK(t < tensors.size(), "chunk past the last tensor");
        const std::uint64_t t_begin = offsets[t];
        const std::uint64_t t_end = t_begin + tensor_bytes(tensors[t]);
        const std::uint64_t stop = std::min(end, t_end);
        if (stop > pos) {
            fill_random_bf16(tensors[t], tensor_key(plan.seed, t), (pos - t_begin) / 2,
                             (stop - pos) / 2, out + (pos - begin) / 2);
            pos = stop;
        }
        ++t;
    }
}

std::uint64_t chunk_end(const Plan& plan, std::uint64_t c) {
    return std::min(plan.data_bytes, (c + 1) * plan.chunk);
}

// Chunks [first, first + buffers.size()) (those that exist) into the buffers, one thread each.
void fill_round(const Plan& plan, std::uint64_t first, Buffers& buffers) {
    const auto fill = [&](std::uint64_t i) {
        const std::uint64_t c = first + i;
        if (c >= plan.n_chunks) return;
        if (buffers[i] == nullptr) buffers[i].reset(new std::uint16_t[plan.chunk / 2]);
        fill_range(plan, c * plan.chunk, chunk_end(plan, c), buffers[i].get());
    };
    std::vector<std::thread> threads;
    for (std::uint64_t i = 1; i < buffers.size(); ++i) threads.emplace_back(fill, i);
    fill(0);
    for (std::thread& th : threads) th.join();
}

// A full disk fails here, in one clear message, not midway.
base::Status check_space(const std::filesystem::path& path, std::uint64_t bytes) {
    std::error_code ec;
    const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
    const std::filesystem::space_info space = std::filesystem::space(dir, ec);
    if (!ec && space.available < bytes) {
        return base::error(base::ErrorCode::kResourceExhausted,
                           "{}: {} bytes needed, the file system has {} free", path.string(), bytes,
                           space.available);
    }
    return base::Status();
}

}  // namespace

std::vector<io::TensorSpec> bf16_specs(const std::vector<TensorSpec>& tensors) {
    std::vector<io::TensorSpec> specs;
    specs.reserve(tensors.size());
    for (const TensorSpec& t : tensors) {
        specs.push_back({.name = t.name, .dtype = io::DType::kBF16, .shape = t.shape});
    }
    return specs;
}

std::uint64_t tensor_key(std::uint64_t seed, std::uint64_t index) {
    return mix64(mix64(seed ^ 0x5171d0c0ffee1234ull) + (index + 1) * kGolden);
}

void fill_random_bf16(const TensorSpec& spec, std::uint64_t key, std::uint64_t first,
                      std::uint64_t n, std::uint16_t* out) {
    // Element e takes 16 bits (lane e % 4, little end first) of word e / 4; the signed 16-bit
    // lane maps to [-1, 1), plenty of resolution for an 8-bit bf16 mantissa. Words are hashed
    // a block at a time, then the lanes are converted in a separate loop the compiler
    // vectorises (the values are finite, so rounding needs no NaN case).
    const float center = spec.center;
    const float scale = spec.half_width * (1.0f / 32768.0f);
    constexpr std::uint64_t kWords = 64;
    std::uint64_t words[kWords];
    std::int16_t lanes[kWords * 4];
    std::uint64_t e = first;
    const std::uint64_t end = first + n;
    while (e < end) {
        const std::uint64_t block_first = e & ~std::uint64_t(3);
        const std::uint64_t n_words = std::min(kWords, (end - block_first + 3) / 4);
        for (std::uint64_t w = 0; w < n_words; ++w) {
            words[w] = mix64(key + (block_first / 4 + w) * kGolden);
        }
        std::memcpy(lanes, words, n_words * 8);
        const std::uint64_t skip = e - block_first;
        const std::uint64_t count = std::min(end, block_first + n_words * 4) - e;
        for (std::uint64_t i = 0; i < count; ++i) {
            const float f = center + scale * float(lanes[skip + i]);
            std::uint32_t u = std::bit_cast<std::uint32_t>(f);
            u += 0x7fffu + ((u >> 16) & 1u);
            out[i] = std::uint16_t(u >> 16);
        }
        out += count;
        e += count;
    }
}

base::Status write_random_safetensors(const std::filesystem::path& path,
                                      const std::vector<TensorSpec>& tensors,
                                      const WriteOptions& options) {
    QVL_CHECK(options.chunk_bytes >= 2 && options.chunk_bytes % 2 == 0, "chunk_bytes even");
    Plan plan{.tensors = &tensors, .seed = options.seed, .chunk = options.chunk_bytes};
    for (const TensorSpec& t : tensors) {
        plan.offsets.push_back(plan.data_bytes);
        plan.data_bytes += tensor_bytes(t);
    }
    plan.n_chunks = (plan.data_bytes + plan.chunk - 1) / plan.chunk;
    QVL_TRY(check_space(path, plan.data_bytes));
    QVL_ASSIGN_OR_RETURN(io::SafetensorsWriter writer,
                         io::SafetensorsWriter::create(path, bf16_specs(tensors)));

    int n_threads = options.n_threads;
    if (n_threads <= 0) n_threads = int(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
    const std::uint64_t per_round = std::clamp<std::uint64_t>(
        std::uint64_t(n_threads), 1, std::max<std::uint64_t>(plan.n_chunks, 1));
    // Two sets of buffers: one is appended while the next round is generated into the other.
    Buffers sets[2] = {Buffers(per_round), Buffers(per_round)};
    std::future<void> next =
        std::async(std::launch::async, fill_round, std::cref(plan), 0, std::ref(sets[0]));
    for (std::uint64_t first = 0, round = 0; first < plan.n_chunks; first += per_round, ++round) {
        next.get();
        if (first + per_round < plan.n_chunks) {
            next = std::async(std::launch::async, fill_round, std::cref(plan), first + per_round,
                              std::ref(sets[(round + 1) % 2]));
        }
        const Buffers& ready = sets[round % 2];
        for (std::uint64_t c = first; c < std::min(plan.n_chunks, first + per_round); ++c) {
            const std::uint64_t bytes = chunk_end(plan, c) - c * plan.chunk;
            QVL_TRY(writer.append(
                std::as_bytes(std::span<const std::uint16_t>(ready[c - first].get(), bytes / 2))));
        }
    }
    return writer.finish();
}

}  // namespace qvl::synth
