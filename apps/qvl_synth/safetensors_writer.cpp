// Speed matters (4.26 GB must take seconds): the data section is cut into large chunks that
// worker threads generate into their own buffer and pwrite() at their final offset, so there is
// no per-element call and no ordering between threads. The generator is counter-based
// (splitmix64's mixer applied to key + index), which makes any chunk computable on its own.
#include "safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
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

void put_u64_le(std::uint64_t v, unsigned char* out) {
    for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

// Writes all of [data, data + size) at offset, retrying short writes and EINTR.
base::Status pwrite_all(int fd, const void* data, std::uint64_t size, std::uint64_t offset,
                        const std::filesystem::path& path) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::pwrite(fd, p, std::min<std::uint64_t>(size, 1ull << 30), off_t(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int code = n < 0 ? errno : EIO;
            return base::error(
                code == ENOSPC ? base::ErrorCode::kResourceExhausted : base::ErrorCode::kIo,
                "{}: write of {} bytes at offset {} failed: {}", path.string(), size, offset,
                std::strerror(code));
        }
        p += n;
        size -= std::uint64_t(n);
        offset += std::uint64_t(n);
    }
    return base::Status();
}

// Generates data-section bytes [begin, end) (both even) into out.
void fill_range(const std::vector<TensorSpec>& tensors, const SafetensorsLayout& layout,
                std::uint64_t seed, std::uint64_t begin, std::uint64_t end, std::uint16_t* out) {
    // The last tensor starting at or before `begin`.
    std::size_t t =
        std::size_t(std::upper_bound(layout.offsets.begin(), layout.offsets.end(), begin) -
                    layout.offsets.begin() - 1);
    std::uint64_t pos = begin;
    while (pos < end) {
        QVL_CHECK(t < tensors.size(), "chunk past the last tensor");
        const std::uint64_t t_begin = layout.offsets[t];
        const std::uint64_t t_end = t_begin + tensor_bytes(tensors[t]);
        const std::uint64_t stop = std::min(end, t_end);
        if (stop > pos) {
            fill_random_bf16(tensors[t], tensor_key(seed, t), (pos - t_begin) / 2, (stop - pos) / 2,
                             out + (pos - begin) / 2);
            pos = stop;
        }
        ++t;
    }
}

}  // namespace

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

SafetensorsLayout plan_layout(const std::vector<TensorSpec>& tensors) {
    SafetensorsLayout layout;
    std::string& h = layout.header;
    h = R"({"__metadata__":{"format":"pt"})";
    std::uint64_t offset = 0;
    for (const TensorSpec& spec : tensors) {
        const std::uint64_t size = tensor_bytes(spec);
        h += ",\"" + spec.name + "\":{\"dtype\":\"BF16\",\"shape\":[";
        for (std::size_t i = 0; i < spec.shape.size(); ++i) {
            if (i > 0) h += ',';
            h += std::to_string(spec.shape[i]);
        }
        h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + size) +
             "]}";
        layout.offsets.push_back(offset);
        offset += size;
    }
    h += '}';
    h.append((8 - h.size() % 8) % 8, ' ');
    layout.data_bytes = offset;
    return layout;
}

base::Status write_random_safetensors(const std::filesystem::path& path,
                                      const std::vector<TensorSpec>& tensors,
                                      const WriteOptions& options) {
    QVL_CHECK(options.chunk_bytes >= 2 && options.chunk_bytes % 2 == 0, "chunk_bytes even");
    const SafetensorsLayout layout = plan_layout(tensors);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return base::error(base::ErrorCode::kIo, "{}: cannot create: {}", path.string(),
                           std::strerror(errno));
    }
    // Reserve the space first: a full disk fails here, in one clear message, not midway.
    if (::fallocate(fd, 0, 0, off_t(layout.file_bytes())) != 0 && errno != EOPNOTSUPP) {
        const int code = errno;
        ::close(fd);
        return base::error(
            code == ENOSPC ? base::ErrorCode::kResourceExhausted : base::ErrorCode::kIo,
            "{}: cannot reserve {} bytes: {}", path.string(), layout.file_bytes(),
            std::strerror(code));
    }

    std::string prefix(8, '\0');
    put_u64_le(layout.header.size(), reinterpret_cast<unsigned char*>(prefix.data()));
    prefix += layout.header;
    base::Status status = pwrite_all(fd, prefix.data(), prefix.size(), 0, path);

    const std::uint64_t data_start = prefix.size();
    const std::uint64_t chunk = options.chunk_bytes;
    const std::uint64_t n_chunks = (layout.data_bytes + chunk - 1) / chunk;
    int n_threads = options.n_threads;
    if (n_threads <= 0) n_threads = int(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
    n_threads = int(
        std::min<std::uint64_t>(std::uint64_t(n_threads), std::max<std::uint64_t>(n_chunks, 1)));

    std::atomic<std::uint64_t> next_chunk{0};
    std::atomic<bool> failed{!status.ok()};
    std::mutex error_mutex;
    auto worker = [&] {
        std::unique_ptr<std::uint16_t[]> buffer(new std::uint16_t[chunk / 2]);
        for (;;) {
            const std::uint64_t c = next_chunk.fetch_add(1);
            if (c >= n_chunks || failed.load()) return;
            const std::uint64_t begin = c * chunk;
            const std::uint64_t end = std::min(layout.data_bytes, begin + chunk);
            fill_range(tensors, layout, options.seed, begin, end, buffer.get());
            base::Status s = pwrite_all(fd, buffer.get(), end - begin, data_start + begin, path);
            if (!s.ok()) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!failed.exchange(true)) status = s;
                return;
            }
        }
    };
    std::vector<std::thread> threads;
    for (int i = 1; i < n_threads; ++i) threads.emplace_back(worker);
    worker();
    for (std::thread& th : threads) th.join();

    if (::close(fd) != 0 && status.ok()) {
        status = base::error(base::ErrorCode::kIo, "{}: close failed: {}", path.string(),
                             std::strerror(errno));
    }
    return status;
}

}  // namespace qvl::synth
