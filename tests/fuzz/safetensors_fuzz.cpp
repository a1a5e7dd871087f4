// Fuzzes the safetensors header parser (SafetensorsFile::open) on whole files. On success every
// view must lie inside the file and agree with its shape and dtype.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static qvl::fuzz::MemFile file("safetensors");
    file.write(data, size);
    qvl::base::Result<qvl::io::SafetensorsFile> st = qvl::io::SafetensorsFile::open(file.path());
    if (!st.ok()) {
        if (st.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    std::uint64_t total = 0;
    for (const qvl::io::TensorInfo& t : st->tensors()) {
        std::uint64_t elements = 1;
        for (std::int64_t d : t.shape) {
            if (d < 0) qvl::fuzz::fail("negative dimension in " + t.name);
            elements *= std::uint64_t(d);
        }
        if (elements * qvl::io::dtype_size(t.dtype) != t.n_bytes) {
            qvl::fuzz::fail("shape x dtype != n_bytes for " + t.name);
        }
        if (t.n_bytes > st->size_bytes()) qvl::fuzz::fail("tensor larger than the file");
        total += t.n_bytes;
        if (st->find(t.name) != &t) qvl::fuzz::fail("find() disagrees for " + t.name);
        // Touch both ends: a view outside the mapping faults here.
        if (t.n_bytes > 0) {
            volatile std::byte first = t.data[0];
            volatile std::byte last = t.data[t.n_bytes - 1];
            (void)first;
            (void)last;
        }
    }
    if (total > st->size_bytes()) qvl::fuzz::fail("tensors hold more bytes than the file");
    return 0;
}
