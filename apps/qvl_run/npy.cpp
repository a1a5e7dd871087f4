#include "npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace qvl::app {

std::string write_npy_f32(const std::string& path, std::span<const float> data,
                          const std::vector<std::int64_t>& shape) {
    std::string dims;
    for (std::int64_t d : shape) dims += std::to_string(d) + ", ";
    if (shape.size() > 1)
        dims.erase(dims.size() - 2);  // "(3, 4)"; a 1-D shape keeps "(3,)"
    else if (!dims.empty())
        dims.erase(dims.size() - 1);
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
    // Magic (6) + version (2) + length (2) + header + '\n' must be a multiple of 64.
    const std::size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header.push_back('\n');
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return path + ": cannot create: " + std::strerror(errno);
    const unsigned char preamble[10] = {0x93,
                                        'N',
                                        'U',
                                        'M',
                                        'P',
                                        'Y',
                                        1,
                                        0,
                                        static_cast<unsigned char>(header.size() & 0xff),
                                        static_cast<unsigned char>(header.size() >> 8)};
    bool ok = std::fwrite(preamble, 1, sizeof preamble, f) == sizeof preamble;
    ok = ok && std::fwrite(header.data(), 1, header.size(), f) == header.size();
    ok = ok && std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();
    ok = (std::fclose(f) == 0) && ok;
    return ok ? std::string() : path + ": write failed";
}

}  // namespace qvl::app
